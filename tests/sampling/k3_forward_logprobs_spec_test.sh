#!/usr/bin/env bash
# --logprobs-file under speculation: one line per generated id, whatever
# drafting proposed and the model rejected. For every speculation mode
# (--spec prompt lookup, --predict, --draft, --draft with --spec as its
# fallback), greedy and seeded, the file equals the plain run's byte for
# byte, and each run is checked to have rejected drafts (the case that once
# logged a rejected position twice; prompt lookup rejects through the same
# verification, reached here with --draft --spec).
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
DRAFT=${K3_TEST_DATA:?}/k3-tiny-dspark
gen=30
run=("$BIN/k3-forward" "$TINY" --ids "$TINY/prompt_ids.txt" --gen $gen --ignore-eos --threads 2 --logprobs 3)

stat_of() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))$2)" "$1"; }

for sampling in "" "--temp 0.9 --top-p 0.95 --seed 7"; do
  tag=${sampling:+seeded}
  tag=${tag:-greedy}
  # shellcheck disable=SC2086
  "${run[@]}" $sampling --logprobs-file "$work/plain-$tag.jsonl" > "$work/plain-$tag.ids" 2> /dev/null
  check "$tag: plain run" 0 "$?"
  check "$tag: plain: one line per id" $gen "$(wc -l < "$work/plain-$tag.jsonl")"
  # The plain output with every third id changed: drafts from it are kept
  # up to the change and rejected there.
  python3 - "$work/plain-$tag.ids" > "$work/predict-$tag.ids" << 'PY'
import sys
ids = open(sys.argv[1]).read().split()
print(" ".join(str(int(t) + 1) if i % 3 == 2 else t for i, t in enumerate(ids)))
PY
  modes=("--spec 4" "--predict $work/predict-$tag.ids" "--draft $DRAFT" "--draft $DRAFT --spec 3")
  labels=("--spec" "--predict" "--draft" "--draft --spec")
  for i in "${!modes[@]}"; do
    mode=${modes[$i]}
    name="$tag ${labels[$i]}"
    out="$work/spec.jsonl"
    rm -f "$out"
    # shellcheck disable=SC2086
    "${run[@]}" $sampling $mode --logprobs-file "$out" --stats-json "$work/spec.json" > "$work/spec.ids" 2> "$work/spec.err"
    check "$name: exit" 0 "$?"
    check "$name: ids as plain" yes "$(cmp -s "$work/spec.ids" "$work/plain-$tag.ids" && echo yes)"
    check "$name: logprobs file = plain's, byte for byte" yes "$(cmp -s "$out" "$work/plain-$tag.jsonl" && echo yes)"
    proposed=$(stat_of "$work/spec.json" "['generation']['drafts_proposed']")
    accepted=$(stat_of "$work/spec.json" "['generation']['drafts_accepted']")
    # The tiny model's random text never repeats, so prompt lookup alone
    # proposes nothing here; every other mode is checked to have rejected.
    [ "${labels[$i]}" = --spec ] && continue
    holds "$name: drafts were rejected ($accepted of $proposed kept)" "[ $proposed -gt $accepted ]"
  done
done

finish k3_forward_logprobs_spec_test
