# k3-fetch-verify download survives interruptions: a client killed with -9
# mid-file resumes with a Range request and ends byte-identical; SIGINT stops
# with exit 130 keeping the .part; a full disk stops cleanly (exit 5) keeping
# finished files, and the next run resumes without refetching them.
source "$K3_SOURCE_DIR/tests/fetch/fake_hub_lib.sh"

S2=model-00002-of-00005.safetensors
S1=model-00001-of-00005.safetensors

# wait_part FILE MINBYTES: until FILE exists with at least MINBYTES (10 s max).
wait_part() {
  for _ in $(seq 200); do
    if [ -f "$1" ] && [ "$(stat -c %s "$1")" -ge "$2" ]; then return 0; fi
    sleep 0.05
  done
  fail "$1 did not reach $2 bytes"
}

# 1. kill -9 in the middle of shard 2 (served slowly so we can catch it).
faults "$WORK/slow.json" '[{"path": "'$S2'", "kind": "throttle", "rate": 200000, "times": -1}]'
start_hub killed --faults "$WORK/slow.json"
D="$WORK/dl"
HF_ENDPOINT="$ENDPOINT" HF_TOKEN="$TOKEN" "$BIN" download "$D" --jobs 1 --progress-interval 1 2>"$WORK/killed.err" &
client=$!
wait_part "$D/$S2.part" 100000
kill -9 "$client"
wait "$client" 2>/dev/null || true
cut_at=$(stat -c %s "$D/$S2.part")
[ "$cut_at" -lt "$(stat -c %s "$REPO/$S2")" ] || fail "shard 2 was already complete when killed"
cmp -s "$REPO/$S1" "$D/$S1" || fail "shard 1 should have finished before the kill"

start_hub resumed
fetch "$D" --jobs 1
expect_rc 0 "resume after kill -9"
same_as_repo "$D"
range_line=$(content_requests "$S2" | grep 'range=bytes=' || true)
[ -n "$range_line" ] || fail "shard 2 was not resumed with a Range request; log: $(cat "$LOG")"
expect_in "$range_line" "status=206" "resume answered with 206"
start=$(echo "$range_line" | sed -E 's/.*range=bytes=([0-9]+)-.*/\1/' | head -1)
[ "$start" -gt 0 ] && [ "$start" -le "$cut_at" ] || fail "resume started at byte $start, the .part had $cut_at"
[ -z "$(content_requests "$S1")" ] || fail "shard 1 (finished before the kill) was requested again"
ls "$D"/*.part >/dev/null 2>&1 && fail ".part left after resume"
verify "$D" --full
expect_rc 0 "verify --full after resume"

# 2. SIGINT: exit 130, the partial file is kept, a re-run finishes it.
start_hub interrupted --faults "$WORK/slow.json"
D2="$WORK/dl2"
HF_ENDPOINT="$ENDPOINT" HF_TOKEN="$TOKEN" "$BIN" download "$D2" --jobs 1 --include "$S2" 2>"$WORK/int.err" &
client=$!
wait_part "$D2/$S2.part" 50000
kill -INT "$client"
set +e
wait "$client"
RC=$?
set -e
ERR="$(cat "$WORK/int.err")"
expect_rc 130 "SIGINT"
expect_in "$ERR" "interrupted" "SIGINT message"
[ -s "$D2/$S2.part" ] || fail "SIGINT removed the .part file"
start_hub after-int
fetch "$D2" --include "$S2"
expect_rc 0 "re-run after SIGINT"
cmp -s "$REPO/$S2" "$D2/$S2" || fail "shard 2 differs after SIGINT + resume"
content_requests "$S2" | grep -q 'range=bytes=' || fail "no Range request after SIGINT"

# 3. The disk fills up (injected: writes fail with ENOSPC after 1.5 MB).
start_hub full
D3="$WORK/dl3"
K3_FETCH_FAIL_WRITE_AFTER=1500000 fetch "$D3" --jobs 1
expect_rc 5 "disk full"
expect_in "$ERR" "disk full" "disk-full message"
[ "$(echo "$ERR" | grep -c 'disk full')" = 1 ] || fail "disk-full error should be one line: $ERR"
cmp -s "$REPO/config.json" "$D3/config.json" || fail "finished metadata lost after disk full"
cmp -s "$REPO/$S1" "$D3/$S1" || fail "finished shard 1 lost after disk full"
[ -f "$D3/$S2.part" ] || fail "the .part of the interrupted shard was not kept"
[ -f "$D3/$S2" ] && fail "an incomplete shard was renamed into place"
grep -A0 "\"$S1\"" "$D3/.k3-manifest.json" | grep -q '"complete": true' || fail "manifest does not record shard 1 complete"
: > "$LOG"
fetch "$D3" --jobs 1
expect_rc 0 "re-run after disk full"
same_as_repo "$D3"
[ -z "$(content_requests "$S1")" ] || fail "shard 1 refetched after disk full"
content_requests "$S2" | grep -q 'range=bytes=' || fail "shard 2 not resumed with Range after disk full"
echo "fetch_resume_test: ok"
