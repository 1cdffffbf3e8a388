#!/usr/bin/env bash
# k3-forward --spec and --predict through the real tools: ids, --logits and
# --state-out files byte-identical to the same run without drafting, on the
# tiny fixture and a generated checkpoint, resident and streaming at two
# budgets, 1 and 2 threads, greedy and seeded; predictions all right, all
# wrong, shorter, longer and edited; drafts actually kept where text repeats,
# and none proposed (no extra bytes) where nothing matches. (Random weights
# do not repeat their own text, so prompt-lookup drafts being kept is tested
# in generation_session_test with the tiny model.)
set -uo pipefail
B=${K3_BIN_DIR:?}
TINY=${K3_TEST_DATA:?}/k3-tiny
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
TOOL=k3-forward
W=$work

G="$W/gen"
"$B/k3-synth" "$G" --seed 5 --vocab 2048 --hidden 256 --intermediate 512 --layers 8 --kda-heads 4 --kda-head-dim 64 \
  --mla-heads 4 --q-lora 64 --kv-lora 32 --experts 64 --top-k 4 --moe-inter 128 --latent 128 --shards 3 2>/dev/null \
  || { echo "k3-synth failed"; exit 1; }
"$B/k3-pack" "$G" "$W/gtrunk" 2>/dev/null || { echo "k3-pack failed"; exit 1; }
"$B/k3-pack" "$TINY" "$W/ttrunk" 2>/dev/null || { echo "k3-pack tiny failed"; exit 1; }

# run NAME MODEL IDS-FILE ARGS...: ids, logits and state of one run.
run() {
  local name=$1 model=$2 ids=$3; shift 3
  "$B/k3-forward" "$model" --ids "$ids" --logits "$W/$name.l" --state-out "$W/$name.s" "$@" >"$W/$name.ids" \
    2>"$W/$name.err"
  echo $? >"$W/$name.rc"
}
# same NAME A B: the two runs' outputs are byte-identical.
same() {
  local ok=yes
  for f in ids l s rc; do cmp -s "$W/$2.$f" "$W/$3.$f" || ok="no ($f differs)"; done
  check "$1" yes "$ok"
}
json() { python3 -c "import json,sys; g=json.load(open('$1'))['generation']; print($2)"; }

cp "$TINY/prompt_ids.txt" "$W/tiny.ids"
# A prompt that repeats itself: prompt lookup searches it.
python3 -c "import random; r=random.Random(3); s=[r.randrange(2048) for _ in range(12)]; print(' '.join(map(str, s*3)))" >"$W/rep.ids"
# A prompt with no repetition at all.
python3 -c "import random; r=random.Random(9); print(' '.join(map(str, r.sample(range(2048), 40))))" >"$W/norep.ids"

for sampling in "" "--temp 0.9 --top-p 0.95 --seed 7"; do
  tag=${sampling:+seeded}; tag=${tag:-greedy}
  run "t-plain-$tag" "$TINY" "$W/tiny.ids" --gen 30 --ignore-eos $sampling
  run "t-spec-$tag" "$TINY" "$W/tiny.ids" --gen 30 --ignore-eos --spec 4 --threads 1 $sampling
  same "tiny $tag: --spec 4 = plain" "t-plain-$tag" "t-spec-$tag"
  run "t-specs-$tag" "$TINY" "$W/tiny.ids" --gen 30 --ignore-eos --spec 8 --threads 2 \
    --trunk "$W/ttrunk" --trunk-gb 0 --cache-gb 0 $sampling
  same "tiny $tag: --spec 8 streaming = plain" "t-plain-$tag" "t-specs-$tag"
  for p in rep norep; do
    run "g-plain-$p-$tag" "$G" "$W/$p.ids" --gen 40 --ignore-eos $sampling
    run "g-spec-$p-$tag" "$G" "$W/$p.ids" --gen 40 --ignore-eos --spec 6 --threads 1 $sampling
    same "generated $p $tag: --spec 6 = plain" "g-plain-$p-$tag" "g-spec-$p-$tag"
    run "g-specs-$p-$tag" "$G" "$W/$p.ids" --gen 40 --ignore-eos --spec 6 --threads 2 \
      --trunk "$W/gtrunk" --trunk-gb 0 --cache-gb 0 --stats-json "$W/g-specs-$p-$tag.json" $sampling
    same "generated $p $tag: --spec 6 streaming (nothing pinned) = plain" "g-plain-$p-$tag" "g-specs-$p-$tag"
    run "g-specp-$p-$tag" "$G" "$W/$p.ids" --gen 40 --ignore-eos --spec 3 --threads 1 \
      --trunk "$W/gtrunk" --trunk-gb 0.004 --cache-gb 0.003 $sampling
    same "generated $p $tag: --spec 3 streaming (partly pinned) = plain" "g-plain-$p-$tag" "g-specp-$p-$tag"
  done
done
# Nothing matches: no draft, and the same bytes per token as plain (within 2%).
run g-plainstream-norep "$G" "$W/norep.ids" --gen 40 --ignore-eos --trunk "$W/gtrunk" --trunk-gb 0 --cache-gb 0 \
  --stats-json "$W/g-plainstream-norep.json"
ratio=$(python3 -c "
import json
a=json.load(open('$W/g-plainstream-norep.json'))['generation']; b=json.load(open('$W/g-specs-norep-greedy.json'))['generation']
ta=a['trunk_bytes_per_generated_token']+a['expert_bytes_per_generated_token']
tb=b['trunk_bytes_per_generated_token']+b['expert_bytes_per_generated_token']
print('%.4f' % (tb/ta))")
holds "no repetition: no draft proposed" "[ $(json "$W/g-specs-norep-greedy.json" "g['drafts_proposed']") = 0 ]"
holds "no repetition: --spec reads <= 2% more bytes per token (ratio $ratio)" "python3 -c 'import sys; sys.exit(0 if $ratio <= 1.02 else 1)'"

# --predict: the model's own output, edited, shorter, longer, all wrong.
cp "$W/g-plain-norep-greedy.ids" "$W/right.pred"
python3 - "$W" <<'PY'
import sys
w = sys.argv[1]
ids = open(w + '/right.pred').read().split()
edit = list(ids)
for i in range(4, len(edit), 10): edit[i] = str((int(edit[i]) + 1) % 2048)
open(w + '/edit.pred', 'w').write(' '.join(edit))
open(w + '/short.pred', 'w').write(' '.join(ids[:12]))
open(w + '/long.pred', 'w').write(' '.join(ids + ids))
open(w + '/wrong.pred', 'w').write(' '.join(str((int(x) + 7) % 2048) for x in ids))
PY
for p in right edit short long wrong; do
  run "g-pred-$p" "$G" "$W/norep.ids" --gen 40 --ignore-eos --predict "$W/$p.pred" --threads 2 \
    --trunk "$W/gtrunk" --trunk-gb 0 --cache-gb 0 --stats-json "$W/g-pred-$p.json"
  same "--predict $p = plain" g-plain-norep-greedy "g-pred-$p"
done
holds "--predict right: 8 tokens per pass" "[ $(json "$W/g-pred-right.json" "int(g['tokens_per_pass'] >= 7.9)") = 1 ]"
holds "--predict edited: more than 3 tokens per pass" "[ $(json "$W/g-pred-edit.json" "int(g['tokens_per_pass'] > 3)") = 1 ]"
holds "--predict wrong: at most 2 drafts rejected" "[ $(json "$W/g-pred-wrong.json" "g['drafts_proposed']") -le 2 ]"
holds "--predict long: all drafts accepted" \
  "[ $(json "$W/g-pred-long.json" "int(g['drafts_accepted'] == g['drafts_proposed'] > 0)") = 1 ]"
run g-pred-seeded "$G" "$W/norep.ids" --gen 40 --ignore-eos --predict "$W/edit.pred" --temp 0.9 --top-p 0.95 --seed 7
same "--predict with seeded sampling = plain" g-plain-norep-seeded g-pred-seeded

# Stops inside an accepted draft: the stop id ends the run exactly where plain does.
stop=$(sed -n 17p "$W/right.pred" | tr -d ' ')
run g-stop-plain "$G" "$W/norep.ids" --gen 40 --stop-id "$stop"
run g-stop-pred "$G" "$W/norep.ids" --gen 40 --stop-id "$stop" --predict "$W/right.pred"
same "--predict with a stop inside a draft = plain" g-stop-plain g-stop-pred
# A continuation of a drafted run equals one run.
echo "3 4" >"$W/more.ids"
"$B/k3-forward" "$G" --ids "$W/more.ids" --state-in "$W/g-pred-edit.s" --gen 5 --spec 4 >"$W/c1.ids" 2>/dev/null
"$B/k3-forward" "$G" --ids "$W/more.ids" --state-in "$W/g-plain-norep-greedy.s" --gen 5 >"$W/c2.ids" 2>/dev/null
check "continuing a drafted run = continuing a plain one" "$(cat "$W/c2.ids")" "$(cat "$W/c1.ids")"

bad "--spec with --recompute" 2 "--recompute" -- "$B/k3-forward" "$G" --ids "$W/norep.ids" --gen 4 --spec 2 --recompute
bad "missing --predict file" 4 "not found" -- "$B/k3-forward" "$G" --ids "$W/norep.ids" --gen 4 --predict "$W/nope"
echo "1 x" >"$W/badpred"
bad "bad --predict ids" 4 "is not a token id" -- "$B/k3-forward" "$G" --ids "$W/norep.ids" --gen 4 --predict "$W/badpred"
finish k3_forward_spec_test
