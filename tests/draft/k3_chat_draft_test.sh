#!/usr/bin/env bash
# k3-chat --draft DIR over the tiny model and its DSpark draft: over four
# turns (each turn rolls the session back to reuse the conversation) the
# transcript, the reply logits and the output are bit-identical to --no-spec,
# resident and streaming, 1 and 2 threads, with and without prompt lookup as
# the fallback; --draft-log has one line per draft pass, verified ones among
# them; a draft that does not fit is refused with exit 3.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
DRAFT=${K3_TEST_DATA:?}/k3-tiny-dspark
"$BIN/k3-pack" "$TINY" "$work/trunk" 2> "$work/pack.err" || { cat "$work/pack.err"; exit 1; }
printf 'Tell me a story.\n/send\nAnd another one.\n/send\nTell me a story.\n/send\nThanks. Another?\n' > "$work/script"

chat() {  # chat NAME FLAGS...
  local name=$1; shift
  "$BIN/k3-chat" "$TINY" --no-think --max-tokens 24 --history "$work/$name.jsonl" --logits "$work/$name.st" "$@" \
    < "$work/script" > "$work/$name.out" 2> "$work/$name.err"
  check "$name exit" 0 "$?"
}
chat plain --no-spec
chat draft --draft "$DRAFT" --no-spec --draft-log "$work/draft.log"
chat draft-lookup --draft "$DRAFT" --threads 2
chat draft-stream --draft "$DRAFT" --no-spec --threads 2 --trunk "$work/trunk" --trunk-gb 0 --cache-gb 0
check "transcript: 4 turns" 8 "$(wc -l < "$work/plain.jsonl")"
for name in draft draft-lookup draft-stream; do
  for f in jsonl st out; do
    check "$name $f == --no-spec" same "$(cmp -s "$work/plain.$f" "$work/$name.$f" && echo same)"
  done
done
draft_passes=$(sed -nE 's/.*draft: ([0-9]+) passes.*/\1/p' "$work/draft.err")
check "--draft-log: one line per pass" "$draft_passes" "$(wc -l < "$work/draft.log")"
holds "draft passes ran" "[ ${draft_passes:-0} -gt 0 ]"
holds "drafts verified" "python3 -c \"import json,sys; sys.exit(0 if sum(json.loads(l)['verified'] for l in open('$work/draft.log')) > 0 else 1)\""
mkdir -p "$work/other"
ln -s "$DRAFT/model.safetensors" "$work/other/model.safetensors"
python3 -c "import json; c=json.load(open('$DRAFT/config.json')); c['target_num_hidden_layers']=93; json.dump(c, open('$work/other/config.json','w'))"
TOOL=k3-chat
bad "a draft for another model" 3 "target of 93 layers" -- "$BIN/k3-chat" "$TINY" --draft "$work/other" < "$work/script"
finish k3_chat_draft_test
