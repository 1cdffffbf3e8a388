#!/usr/bin/env bash
# k3-doctor against bad surroundings: a cgroup memory.max of 0 is no usable
# budget (FAIL), a report that cannot be written (stdout on a full device)
# exits 5, a missing --probe-file or --root (or $K3_DOCTOR_ROOT) is named,
# and a recorded meminfo that is a link to /dev/zero is refused at once; a
# sparse --probe-file (a headers-only checkpoint's shard) is not measured as
# if its holes, read as zeros at memory speed, were the disk.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
DATA=${K3_TEST_DATA:?}
DOC="$BIN/k3-doctor"
TOOL=k3-doctor

# 1. memory.max of 0: the usable check fails, no preset is recommended.
cp -r "$DATA/doctor/v2-container" "$work/zero"
echo 0 > "$work/zero/sys/fs/cgroup/memory.max"
out=$("$DOC" --root "$work/zero" --no-probe 2> "$work/err"); rc=$?
check "memory.max 0: exit (cannot run)" 11 "$rc"
holds "memory.max 0: usable is a FAIL" 'grep -Eq "^  FAIL +usable " <<<"$out"'
contains "memory.max 0: says why" "leaves no memory" "$out"
json=$("$DOC" --root "$work/zero" --no-probe --json 2> /dev/null)
check "memory.max 0: JSON usable_bytes" 0 "$(python3 -c 'import json,sys
d = json.loads(sys.argv[1])
print([c for c in d["sections"]["memory"] if c["name"] == "usable"][0]["details"]["usable_bytes"])' "$json" 2>&1)"
# The same tree with its 8 GiB limit is usable (the FAIL above is the zero's doing).
out=$("$DOC" --root "$DATA/doctor/v2-container" --no-probe 2> /dev/null)
holds "memory.max 8 GiB: usable is OK" 'grep -Eq "^  OK +usable " <<<"$out"'

# 2. The report cannot be written: exit 5, one line saying so.
"$DOC" --root "$DATA/doctor/v2-container" --no-probe > /dev/full 2> "$work/err"; rc=$?
check "stdout full: exit" 5 "$rc"
check "stdout full: one line" 1 "$(wc -l < "$work/err")"
contains "stdout full: message" "cannot write the report to stdout: No space left on device" "$(cat "$work/err")"

# 3. Missing or unusable paths are named (usage errors, exit 2).
bad "--probe-file missing" 2 "--probe-file $work/nope: no such file" -- "$DOC" --probe-file "$work/nope"
mkfifo "$work/fifo"
bad "--probe-file FIFO" 2 "$work/fifo: is not a regular file" -- timeout 20 "$DOC" --probe-file "$work/fifo"
bad "--root missing" 2 "--root $work/none: no such directory" -- "$DOC" --root "$work/none" --no-probe
bad "K3_DOCTOR_ROOT missing" 2 "\$K3_DOCTOR_ROOT $work/none: no such directory" -- \
  env K3_DOCTOR_ROOT="$work/none" "$DOC" --no-probe

# 4. A recorded meminfo or cgroup file that is a link to /dev/zero: refused
#    promptly, naming the file (exit 4), not read forever.
for f in proc/meminfo sys/fs/cgroup/memory.max; do
  rm -rf "$work/zeroed"
  cp -r "$DATA/doctor/v2-container" "$work/zeroed"
  ln -sf /dev/zero "$work/zeroed/$f"
  bad "$f -> /dev/zero" 4 "$work/zeroed/$f: is not a regular file" -- timeout 20 "$DOC" --root "$work/zeroed" --no-probe
done

# 5. Sparse probe files: all holes is "not measured", never "fast enough";
#    with some data, only the data is read and the summary says so.
truncate -s 1G "$work/holes.bin"
"$DOC" --probe-file "$work/holes.bin" --probe-seconds 1 > "$work/holes.out" 2>&1
line=$(grep 'probe.read_bandwidth' "$work/holes.out")
contains "all holes: not measured" "not measured on $work/holes.bin: cannot measure: a sparse file with 0 B of data" "$line"
check "all holes: no speed reported" "" "$(grep -E 'MB/s|fast enough' <<< "$line")"
truncate -s 1G "$work/part.bin"
head -c 33554432 /dev/urandom | dd of="$work/part.bin" bs=1M seek=100 conv=notrunc iflag=fullblock status=none
"$DOC" --probe-file "$work/part.bin" --probe-seconds 1 > "$work/part.out" 2>&1
contains "32 MiB of data: measured on the data only" "data only: 33.6 MB of a sparse 1.07 GB" \
  "$(grep 'probe.read_bandwidth' "$work/part.out")"
finish k3_doctor_hostile_test
