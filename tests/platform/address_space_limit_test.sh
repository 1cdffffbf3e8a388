#!/usr/bin/env bash
# An address-space limit (RLIMIT_AS, `ulimit -v`) is a memory limit like a
# cgroup's: the plan counts the room left under it, so a --batch larger than
# fits is refused with exit 6 naming how many sequences would fit and the
# limit, never ended by std::bad_alloc as an internal error; a batch that
# fits still runs; k3-doctor's usable budget names the limit.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
TOOL=k3-forward
limit_kb=2000000

python3 -c "print('\n'.join('5 17 42' for _ in range(30000)))" > "$work/big.batch"
bad "30000 sequences under ulimit -v" 6 "sequences would fit: split the batch" -- \
  bash -c "ulimit -v $limit_kb && exec \"\$@\"" _ "$BIN/k3-forward" "$TINY" --batch "$work/big.batch" --gen 2 --threads 2
contains "the refusal names the limit" "address-space limit (ulimit -v)" "$(cat "$work/err")"
fit=$(sed -nE 's/.*; ([0-9]+) sequences would fit.*/\1/p' "$work/err")
holds "some but not all sequences fit ($fit)" "[ -n '$fit' ] && [ '$fit' -gt 0 ] && [ '$fit' -lt 30000 ]"

# Fewer than the refusal says fit (half, at most 200): runs, under the same limit.
n=$((fit / 2 < 200 ? fit / 2 : 200))
head -n $n "$work/big.batch" > "$work/fits.batch"
bash -c "ulimit -v $limit_kb && exec \"\$@\"" _ "$BIN/k3-forward" "$TINY" --batch "$work/fits.batch" --gen 2 \
  --threads 2 > "$work/fits.out" 2> "$work/fits.err"
check "a batch that fits runs under the limit" 0 "$?"
check "one line per sequence" $n "$(wc -l < "$work/fits.out")"
holds "no internal error" "! grep -q 'internal error' '$work/fits.err' '$work/err'"

bash -c "ulimit -v $limit_kb && exec \"\$@\"" _ "$BIN/k3-doctor" --model "$TINY" --no-probe > "$work/doctor.out" 2>&1
contains "k3-doctor: the usable budget names the limit" "address-space limit (ulimit -v)" "$(cat "$work/doctor.out")"

finish address_space_limit_test
