#!/usr/bin/env bash
# k3-forward --batch without --trunk or a budget (every weight resident)
# plans the sequences' states and caches as the budgeted path does: a batch
# whose KDA state and MLA cache do not fit is refused before any state is
# allocated (exit 6, saying how many sequences would fit), where a million
# lines used to grow past 11 GB and end in "internal error: std::bad_alloc".
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
TOOL=k3-forward

# 1. A context no sequence's cache can hold: refused at once, nothing written.
python3 -c "print('\n'.join(['1 2 3'] * 64))" > "$work/64.txt"
bad "64 sequences at --ctx 1e8" 6 "k3-forward: a batch of 64 sequences needs" -- \
  timeout 60 "$BIN/k3-forward" "$TINY" --batch "$work/64.txt" --gen 2 --ctx 100000000
contains "names the resident weights" "with the whole model resident" "$(cat "$work/err")"
contains "names the per-sequence state" "of KDA state and MLA cache per sequence" "$(cat "$work/err")"
contains "names the limit's source" "available: K3_AVAILABLE_MEMORY" \
  "$(K3_AVAILABLE_MEMORY=1000000000 "$BIN/k3-forward" "$TINY" --batch "$work/64.txt" --gen 2 --ctx 100000000 2>&1)"

# 2. Many lines under a memory limit: refused in seconds, naming how many fit,
#    and that many lines are not refused by the plan.
python3 -c "print('\n'.join(['1 2 3 4'] * 200000))" > "$work/many.txt"
start=$(date +%s)
K3_AVAILABLE_MEMORY=400000000 timeout 120 "$BIN/k3-forward" "$TINY" --batch "$work/many.txt" --gen 1 \
  > "$work/out" 2> "$work/err"; rc=$?
check "200k sequences in 400 MB: exit" 6 "$rc"
check "200k sequences in 400 MB: nothing on stdout" 0 "$(stat -c %s "$work/out")"
last=$(tail -1 "$work/err")
contains "200k sequences: says how many fit" "sequences would fit: split the batch" "$last"
holds "200k sequences: refused within 60 s" "[ $(($(date +%s) - start)) -lt 60 ]"
fit=$(sed -nE 's/.*; ([0-9]+) sequences would fit.*/\1/p' <<< "$last")
holds "a number that fits, below the batch ($fit)" "[ '${fit:-0}' -gt 0 ] && [ '${fit:-0}' -lt 200000 ]"
if [ "${fit:-0}" -gt 0 ]; then
  head -n "$fit" "$work/many.txt" > "$work/fit.txt"
  head -n $((fit + 1)) "$work/many.txt" > "$work/over.txt"
  # --gen 0 evaluates nothing past the prompts: the plan decides alone.
  K3_AVAILABLE_MEMORY=400000000 timeout 300 "$BIN/k3-forward" "$TINY" --batch "$work/over.txt" --gen 1 \
    > /dev/null 2> "$work/err"; rc=$?
  check "one more than the fitting number is refused" 6 "$rc"
  K3_AVAILABLE_MEMORY=400000000 timeout 300 "$BIN/k3-forward" "$TINY" --batch "$work/fit.txt" --gen 1 \
    > "$work/out" 2> "$work/err"; rc=$?
  holds "the fitting number is not refused by the plan (exit $rc)" "[ $rc != 6 ]"
fi

# 3. A batch that fits still runs all-resident as before.
printf '976 4490\n39 6053\n' > "$work/two.txt"
"$BIN/k3-forward" "$TINY" --batch "$work/two.txt" --gen 3 --ignore-eos > "$work/out" 2> "$work/err"
check "two sequences: exit" 0 "$?"
check "two sequences: two lines" 2 "$(wc -l < "$work/out")"
finish batch_resident_plan_test
