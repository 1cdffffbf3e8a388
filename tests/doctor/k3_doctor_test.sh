#!/usr/bin/env bash
# k3-doctor on this machine, through the real binary: every section printed,
# exit 0 (ready) or 10 (ready with warnings); usage errors exit 2 with one
# line on stderr; a missing checkpoint is a FAIL (exit 11: cannot run).
set -u
bin="$K3_BIN_DIR/k3-doctor"
tiny="$K3_TEST_DATA/k3-tiny"
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A real run: the tiny checkpoint as the model, an empty trunk directory.
out=$("$bin" --model "$tiny" --trunk "$tmp" --probe-seconds 0.5 2>"$tmp/err"); rc=$?
echo "$out"
check "real run exits 0 or 10 (got $rc)" '[ $rc -eq 0 ] || [ $rc -eq 10 ]'
for section in CPU Memory Storage Checkpoint Forecast; do
  check "section $section printed" 'grep -q "^$section\$" <<<"$out"'
done
for name in simd kernel_path cores ram cgroup_limit usable memlock_limit model.free_space model.filesystem \
            model.o_direct model.read_bandwidth trunk.free_space index trunk preset seconds_per_token; do
  check "check $name printed" 'grep -Eq "^  (OK|WARN|FAIL) +$name " <<<"$out"'
done
check "tiny checkpoint found: 5 shards" 'grep -q "5 shards" <<<"$out"'
check "arithmetic shown" 'grep -q "seconds/token   = " <<<"$out"'
check "result line names the exit code" 'grep -q "(exit $rc)" <<<"$out"'
check "nothing on stderr" '[ ! -s "$tmp/err" ]'

# --json is one valid JSON object with the same status.
json=$("$bin" --json --model "$tiny" --no-probe); jrc=$?
check "--json parses" 'python3 -c "import json,sys; d=json.loads(sys.argv[1]); assert d[\"exit_code\"]==$jrc" "$json"'

# A directory that is not a checkpoint cannot run.
"$bin" --model "$tmp" --no-probe >"$tmp/out" 2>&1; rc=$?
check "empty model dir exits 11 (got $rc)" '[ $rc -eq 11 ]'
check "empty model dir is a FAIL" 'grep -Eq "^  FAIL +index " "$tmp/out"'

# Usage errors: exit 2, one line naming the tool.
"$bin" --no-such-flag >"$tmp/out" 2>"$tmp/err"; rc=$?
check "bad flag exits 2 (got $rc)" '[ $rc -eq 2 ]'
check "bad flag: one line on stderr" '[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "^k3-doctor: " "$tmp/err"'
"$bin" --hit-rate 3 >/dev/null 2>"$tmp/err"; rc=$?
check "out-of-range --hit-rate exits 2 (got $rc)" '[ $rc -eq 2 ]'
help=$("$bin" --help); rc=$?
check "--help exits 0" '[ $rc -eq 0 ]'
check "--help lists the exit codes" 'grep -q "ready, with warnings" <<<"$help" && grep -q "130" <<<"$help"'

# --root reads a recorded tree (the environment variable works too).
out=$(K3_DOCTOR_ROOT="$K3_TEST_DATA/doctor/v1-docker" "$bin" --no-probe)
check "recorded root: docker cgroup v1 limit" 'grep -q "cgroup v1: 17.18 GB" <<<"$out"'
check "recorded root: AVX2 path" 'grep -q "take the AVX2 path" <<<"$out"'

exit $fail
