#!/usr/bin/env bash
# The memory figures a plan is made from, when they are not byte counts:
# K3_AVAILABLE_MEMORY of -1, 2^64 or more, garbage, a suffix or 0 is refused
# (exit 2, naming the variable) by every tool that plans; it used to be
# ignored or to turn the check off ("the plan fits" for 703,687 GB). A cgroup
# memory.max of garbage is a limit of 0 (nothing fits), not "no limit".
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
DATA=${K3_TEST_DATA:?}
prompt=$(cat "$TINY/prompt_ids.txt")

for v in -1 18446744073709551616 99999999999999999999999 garbage 8G " 5" 0 ""; do
  TOOL=k3-forward
  bad "k3-forward K3_AVAILABLE_MEMORY='$v'" 2 "K3_AVAILABLE_MEMORY=\"$v\" is not a byte count" -- \
    env K3_AVAILABLE_MEMORY="$v" "$BIN/k3-forward" "$TINY" --gen 2 --ids "$TINY/prompt_ids.txt"
  bad "k3-forward --plan K3_AVAILABLE_MEMORY='$v'" 2 "K3_AVAILABLE_MEMORY" -- \
    env K3_AVAILABLE_MEMORY="$v" "$BIN/k3-forward" "$TINY" --preset laptop --plan
  TOOL=k3-doctor
  bad "k3-doctor K3_AVAILABLE_MEMORY='$v'" 2 "K3_AVAILABLE_MEMORY" -- \
    env K3_AVAILABLE_MEMORY="$v" "$BIN/k3-doctor" --root "$DATA/doctor/v2-container" --no-probe
done
# A byte count is still taken.
K3_AVAILABLE_MEMORY=8000000000 "$BIN/k3-forward" "$TINY" --gen 2 --ids "$TINY/prompt_ids.txt" > "$work/out" 2> /dev/null
check "K3_AVAILABLE_MEMORY=8000000000: runs" 0 "$?"
check "K3_AVAILABLE_MEMORY=8000000000: two ids" 2 "$(wc -l < "$work/out")"

# A cgroup memory.max that is no byte count: k3-doctor reports no usable memory.
for g in "eight gigs" "-1" "12abc"; do
  rm -rf "$work/g"
  cp -r "$DATA/doctor/v2-container" "$work/g"
  printf '%s\n' "$g" > "$work/g/sys/fs/cgroup/memory.max"
  out=$("$BIN/k3-doctor" --root "$work/g" --no-probe 2> "$work/err"); rc=$?
  check "memory.max '$g': exit (cannot run)" 11 "$rc"
  holds "memory.max '$g': usable is a FAIL" 'grep -Eq "^  FAIL +usable " <<<"$out"'
  contains "memory.max '$g': says the file is no byte count" "memory.max is not a byte count, taken as 0" "$out"
done
finish memory_env_hostile_test
