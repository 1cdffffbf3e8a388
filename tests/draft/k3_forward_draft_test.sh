#!/usr/bin/env bash
# k3-forward --draft DIR (the tiny DSpark draft of tests/data/k3-tiny-dspark)
# through the real tool: --teacher-forcing drafts checked against the
# fixture's golden draft ids; with drafting, ids, --logits and --state-out
# byte-identical to plain decoding, greedy and seeded, resident and
# streaming at two budgets, 1 and 2 threads, the draft's own weights
# resident or streamed; across a state save/resume;
# --stats-json and --draft-log agree; a draft that does not fit is refused
# with exit 3.
set -uo pipefail
B=${K3_BIN_DIR:?}
TINY=${K3_TEST_DATA:?}/k3-tiny
DRAFT=${K3_TEST_DATA:?}/k3-tiny-dspark
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
TOOL=k3-forward
W=$work
"$B/k3-pack" "$TINY" "$W/trunk" 2>/dev/null || { echo "k3-pack failed"; exit 1; }
: >"$W/empty.ids"

# Teacher forcing over the fixture's sequence: one draft per position >= 1.
python3 -c "import json; print(' '.join(map(str, json.load(open('$DRAFT/golden.json'))['inputs']['sequence_ids'])))" >"$W/seq.ids"
"$B/k3-forward" "$TINY" --ids "$W/seq.ids" --teacher-forcing --draft "$DRAFT" --draft-log "$W/tf.log" >"$W/tf.out" 2>"$W/tf.err"
check "teacher forcing exit" 0 $?
verdict=$(python3 - "$DRAFT/golden.json" "$W/tf.log" "$W/seq.ids" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
lines = [json.loads(l) for l in open(sys.argv[2])]
seq = open(sys.argv[3]).read().split()
bad = []
if [l["anchor_pos"] for l in lines] != list(range(1, len(seq))): bad.append("anchor positions")
for l in lines:
    if l["anchor_id"] != int(seq[l["anchor_pos"]]) or l["verified"] != 0 or l["accepted"] != 0 or len(l["draft"]) != 7:
        bad.append("line %d" % l["anchor_pos"])
at = {l["anchor_pos"]: l["draft"] for l in lines}
cases = [c for c in g["cases"] if c["n_rows"] == 7]
for c in cases:
    if at.get(c["anchor_pos"]) != c["draft_ids"]: bad.append("case " + c["name"])
print("ok %d" % len(cases) if not bad else " ".join(bad))
PY
)
check "teacher forcing drafts = golden draft ids" "ok 4" "$verdict"
"$B/k3-forward" "$TINY" --ids "$W/seq.ids" --teacher-forcing >"$W/tf-plain.out" 2>/dev/null
check "teacher forcing ids unchanged by --draft" yes "$(cmp -s "$W/tf.out" "$W/tf-plain.out" && echo yes)"

# run NAME ARGS...: ids, logits and state of one run on the fixture prompt.
run() {
  local name=$1; shift
  "$B/k3-forward" "$TINY" --ids "$TINY/prompt_ids.txt" --logits "$W/$name.l" --state-out "$W/$name.s" "$@" \
    >"$W/$name.ids" 2>"$W/$name.err"
  echo $? >"$W/$name.rc"
}
same() {
  local ok=yes
  for f in ids l s rc; do cmp -s "$W/$2.$f" "$W/$3.$f" || ok="no ($f differs)"; done
  check "$1" yes "$ok"
}
stat_of() { python3 -c "import json; print(json.load(open('$1'))$2)"; }

for sampling in "" "--temp 0.9 --top-p 0.95 --seed 7"; do
  tag=${sampling:+seeded}; tag=${tag:-greedy}
  run "plain-$tag" --gen 30 --ignore-eos $sampling
  run "draft1-$tag" --gen 30 --ignore-eos --draft "$DRAFT" --threads 1 $sampling
  same "$tag: --draft resident 1 thread = plain" "plain-$tag" "draft1-$tag"
  run "draft2-$tag" --gen 30 --ignore-eos --draft "$DRAFT" --threads 2 --trunk "$W/trunk" --trunk-gb 0 --cache-gb 0 \
    --stats-json "$W/draft2-$tag.json" --draft-log "$W/draft2-$tag.log" $sampling
  same "$tag: --draft streaming (nothing pinned) 2 threads = plain" "plain-$tag" "draft2-$tag"
  run "draft3-$tag" --gen 30 --ignore-eos --draft "$DRAFT" --threads 2 --trunk "$W/trunk" --trunk-gb 0.004 \
    --cache-gb 0.002 $sampling
  same "$tag: --draft streaming (partly pinned) = plain" "plain-$tag" "draft3-$tag"
  run "draft4-$tag" --gen 30 --ignore-eos --draft "$DRAFT" --spec 3 --threads 1 $sampling
  same "$tag: --draft with prompt lookup as fallback = plain" "plain-$tag" "draft4-$tag"
  j="$W/draft2-$tag.json"
  holds "$tag: draft passes run" "[ $(stat_of "$j" "['draft']['passes']") -gt 0 ]"
  holds "$tag: drafts verified" "[ $(stat_of "$j" "['draft']['drafts_verified']") -gt 0 ]"
  check "$tag: ids drafted = 7 per pass" "$(stat_of "$j" "['draft']['passes']*7")" "$(stat_of "$j" "['draft']['drafts_proposed']")"
  check "$tag: verified drafts = the session's" "$(stat_of "$j" "['generation']['drafts_proposed']")" \
    "$(stat_of "$j" "['draft']['drafts_verified']")"
  check "$tag: accepted drafts = the session's" "$(stat_of "$j" "['generation']['drafts_accepted']")" \
    "$(stat_of "$j" "['draft']['drafts_accepted']")"
  logsum=$(python3 -c "
import json
L=[json.loads(l) for l in open('$W/draft2-$tag.log')]
print(len(L), sum(l['verified'] for l in L), sum(l['accepted'] for l in L))")
  check "$tag: --draft-log lines = passes, verified, accepted" \
    "$(stat_of "$j" "['draft']['passes']") $(stat_of "$j" "['draft']['drafts_verified']") $(stat_of "$j" "['draft']['drafts_accepted']")" "$logsum"

  # Save after 12 ids, resume for 18 more with --draft: the draft's context is
  # rebuilt from the saved ids, the output is that of one run.
  "$B/k3-forward" "$TINY" --ids "$TINY/prompt_ids.txt" --gen 12 --ignore-eos --draft "$DRAFT" --state-out "$W/half-$tag.s" \
    $sampling >"$W/half-$tag.ids" 2>/dev/null
  "$B/k3-forward" "$TINY" --ids "$W/empty.ids" --state-in "$W/half-$tag.s" --gen 18 --ignore-eos --draft "$DRAFT" \
    --state-out "$W/rest-$tag.s" --stats-json "$W/rest-$tag.json" --trunk "$W/trunk" --trunk-gb 0 --cache-gb 0 \
    --draft-log "$W/rest-$tag.log" >"$W/rest-$tag.ids" 2>"$W/rest-$tag.err"
  # A draft depends on its context alone: after the rebuild, every anchor
  # both runs drafted at gets the same 7 ids.
  common=$(python3 -c "
import json
a={d['anchor_pos']: d['draft'] for d in map(json.loads, open('$W/draft2-$tag.log'))}
b={d['anchor_pos']: d['draft'] for d in map(json.loads, open('$W/rest-$tag.log'))}
k=[p for p in b if p in a]
print(len(k) if k and all(a[p] == b[p] for p in k) else 'differ')")
  holds "$tag: resumed drafts = one run's drafts ($common anchors)" "[ '$common' != differ ] && [ '$common' -ge 5 ]"
  cat "$W/half-$tag.ids" "$W/rest-$tag.ids" >"$W/resumed-$tag.ids"
  check "$tag: save/resume with --draft: ids = one plain run" yes "$(cmp -s "$W/resumed-$tag.ids" "$W/plain-$tag.ids" && echo yes)"
  check "$tag: save/resume with --draft: state = one plain run" yes "$(cmp -s "$W/rest-$tag.s" "$W/plain-$tag.s" && echo yes)"
  contains "$tag: resume rebuilds the draft context" "rebuilding the draft's context" "$(cat "$W/rest-$tag.err")"
  check "$tag: resumed run never lacks taps" 0 "$(stat_of "$W/rest-$tag.json" "['draft']['skipped_no_taps']")"
  holds "$tag: resumed run drafts" "[ $(stat_of "$W/rest-$tag.json" "['draft']['passes']") -gt 0 ]"
done

# Past --draft-max-context no draft pass runs.
"$B/k3-forward" "$TINY" --ids "$TINY/prompt_ids.txt" --gen 10 --ignore-eos --draft "$DRAFT" --draft-max-context 3 \
  --trunk "$W/trunk" --trunk-gb 0 --cache-gb 0 --stats-json "$W/cap.json" >"$W/cap.ids" 2>/dev/null
check "--draft-max-context: no passes" 0 "$(stat_of "$W/cap.json" "['draft']['passes']")"
holds "--draft-max-context: skips counted" "[ $(stat_of "$W/cap.json" "['draft']['skipped_long_context']") -gt 0 ]"
check "--draft-max-context: ids = plain" yes "$(head -10 "$W/plain-greedy.ids" | cmp -s - "$W/cap.ids" && echo yes)"

# --plan counts the draft: its weights and buffers, and its context per position.
"$B/k3-forward" "$TINY" --trunk "$W/trunk" --trunk-gb 0 --cache-gb 0 --ctx 1000 --plan --draft "$DRAFT" 2>"$W/plan.err"
check "--plan with --draft exit" 0 $?
contains "--plan shows the draft (streamed: the default preset, laptop, streams in row blocks)" "draft model       streamed:" "$(cat "$W/plan.err")"
contains "--plan: context 1000 positions x 480 B" "1000 positions x 480 B" "$(cat "$W/plan.err")"

# Streamed draft (the trunk streams in row blocks, as on the min and laptop
# presets): its matrices are read per pass through one small buffer (10 KB:
# several blocks per matrix); ids, logits, state and every drafted id equal
# the resident draft's.
for sampling in "" "--temp 0.9 --top-p 0.95 --seed 7"; do
  tag=${sampling:+seeded}; tag=${tag:-greedy}
  run "residentdraft-$tag" --gen 30 --ignore-eos --draft "$DRAFT" --threads 2 --trunk "$W/trunk" --trunk-gb 0 \
    --cache-gb 0 --block-mb 0 --stats-json "$W/residentdraft-$tag.json" --draft-log "$W/residentdraft-$tag.log" $sampling
  same "$tag: resident draft, trunk streamed in whole layers = plain" "plain-$tag" "residentdraft-$tag"
  run "streamdraft-$tag" --gen 30 --ignore-eos --draft "$DRAFT" --threads 2 --trunk "$W/trunk" --trunk-gb 0 \
    --cache-gb 0 --block-mb 0.01 --stats-json "$W/streamdraft-$tag.json" --draft-log "$W/streamdraft-$tag.log" $sampling
  same "$tag: streamed draft = plain" "plain-$tag" "streamdraft-$tag"
  check "$tag: streamed draft: every draft = the resident draft's" yes \
    "$(cmp -s "$W/streamdraft-$tag.log" "$W/residentdraft-$tag.log" && echo yes)"
  check "$tag: streamed in 10 KB blocks" 10000 "$(stat_of "$W/streamdraft-$tag.json" "['draft']['streamed_block_bytes']")"
  holds "$tag: streamed draft read its weights" "[ $(stat_of "$W/streamdraft-$tag.json" "['draft']['bytes_read']") -gt 0 ]"
  check "$tag: resident draft reads nothing per pass" 0 "$(stat_of "$W/residentdraft-$tag.json" "['draft']['bytes_read']")"
  check "$tag: whole-layer streaming keeps the draft resident" 0 \
    "$(stat_of "$W/residentdraft-$tag.json" "['draft']['streamed_block_bytes']")"
done
"$B/k3-forward" "$TINY" --trunk "$W/trunk" --preset min --ctx 1000 --plan --draft "$DRAFT" 2>"$W/plan-min.err"
check "--plan --preset min with --draft exit" 0 $?
contains "--plan --preset min: the draft streams" "draft model       streamed:" "$(cat "$W/plan-min.err")"
"$B/k3-forward" "$TINY" --trunk "$W/trunk" --preset desktop --ctx 1000 --plan --draft "$DRAFT" 2>"$W/plan-desk.err"
contains "--plan --preset desktop: the draft is resident" "draft model       weights and buffers" "$(cat "$W/plan-desk.err")"

# A draft made for another model: exit 3 naming what does not fit.
mk() {  # mk NAME PYTHON-EDIT: a copy of the draft with its config edited
  mkdir -p "$W/$1"; ln -sf "$DRAFT/model.safetensors" "$W/$1/model.safetensors"
  python3 -c "import json; c=json.load(open('$DRAFT/config.json')); $2; json.dump(c, open('$W/$1/config.json','w'))"
}
mk layers "c['target_layer_ids'][4]=40"
mk hidden "c['hidden_size']=128; c['target_hidden_size']=128"
mk vocab "c['vocab_size']=9000; c['draft_vocab_size']=9000"
mk nope "c['mla_use_nope']=True"
bad "target layer past the model" 3 "target layer 40" -- "$B/k3-forward" "$TINY" --ids "$TINY/prompt_ids.txt" --gen 2 --draft "$W/layers"
bad "hidden size" 3 "hidden size 128" -- "$B/k3-forward" "$TINY" --ids "$TINY/prompt_ids.txt" --gen 2 --draft "$W/hidden"
bad "vocabulary" 3 "vocabulary of 9000" -- "$B/k3-forward" "$TINY" --ids "$TINY/prompt_ids.txt" --gen 2 --draft "$W/vocab"
bad "NoPE draft" 3 "mla_use_nope" -- "$B/k3-forward" "$TINY" --ids "$TINY/prompt_ids.txt" --gen 2 --draft "$W/nope"
bad "no draft dir" 3 "no config.json" -- "$B/k3-forward" "$TINY" --ids "$TINY/prompt_ids.txt" --gen 2 --draft "$W/none"
bad "--draft-log alone" 2 "--draft-log needs --draft" -- "$B/k3-forward" "$TINY" --ids "$TINY/prompt_ids.txt" --draft-log "$W/x.log"
bad "--recompute with --draft" 2 "--recompute" -- "$B/k3-forward" "$TINY" --ids "$TINY/prompt_ids.txt" --recompute --draft "$DRAFT"
finish k3_forward_draft_test
