# k3-fetch-verify download against a misbehaving hub: dropped connections,
# stalls, 500/429 (with Retry-After) and a server ignoring Range are retried
# and resumed; wrong bytes are caught by the hash and that file alone is
# fetched again; bytes that stay wrong stop the run naming file and hashes.
source "$K3_SOURCE_DIR/tests/fetch/fake_hub_lib.sh"

S1=model-00001-of-00005.safetensors
S2=model-00002-of-00005.safetensors
S3=model-00003-of-00005.safetensors
S4=model-00004-of-00005.safetensors

# 1. Transient failures, all in one run.
faults "$WORK/flaky.json" '[
  {"path": "api", "kind": "status", "status": 429, "retry_after": "0", "where": "api", "times": 1},
  {"path": "'$S1'", "kind": "stall", "after": 4096, "seconds": 30, "times": 1},
  {"path": "'$S3'", "kind": "drop", "after": 300000, "times": 1},
  {"path": "'$S4'", "kind": "status", "status": 500, "times": 2},
  {"path": "'$S2'", "kind": "status", "status": 503, "where": "cdn", "retry_after": "0", "times": 1},
  {"path": "tiktoken.model", "kind": "drop", "after": 1000, "times": 1},
  {"path": "tiktoken.model", "kind": "ignore-range", "times": 1}
]'
start_hub flaky --faults "$WORK/flaky.json"
D="$WORK/dl"
fetch "$D" --jobs 2
expect_rc 0 "download through transient faults"
same_as_repo "$D"
grep -q 'status=429' "$LOG" || fail "the 429 fault was not hit"
[ "$(content_requests "$S4" | wc -l)" -ge 3 ] || fail "shard 4 was not retried after two 500s: $(content_requests "$S4")"
content_requests "$S3" | grep -q 'range=bytes=' || fail "the dropped shard 3 was not resumed with Range"
content_requests "$S1" | grep -q 'range=bytes=' || fail "the stalled shard 1 was not resumed with Range"
content_requests tiktoken.model | grep -q 'range=bytes=.*status=200' ||
  fail "the server ignoring Range was not exercised: $(content_requests tiktoken.model)"
expect_in "$ERR" "$S3: connection dropped" "drop reported"
expect_in "$ERR" "stalled" "stall reported"
verify "$D" --full
expect_rc 0 "verify --full after the flaky download"

# 2. Wrong bytes once: detected by the hash, that file alone downloaded again.
faults "$WORK/corrupt1.json" '[{"path": "'$S2'", "kind": "corrupt", "at": 777777, "times": 1}]'
start_hub corrupt-once --faults "$WORK/corrupt1.json"
D2="$WORK/dl2"
fetch "$D2" --jobs 2
expect_rc 0 "download with one corrupted transfer"
same_as_repo "$D2"
[ "$(content_requests "$S2" | wc -l)" = 2 ] || fail "shard 2 should be fetched exactly twice: $(content_requests "$S2")"
for f in $S1 $S3 $S4 config.json; do
  [ "$(content_requests "$f" | wc -l)" = 1 ] || fail "$f was fetched more than once: $(content_requests "$f")"
done
expect_in "$ERR" "$S2: hash mismatch" "mismatch reported"

# 3. Wrong bytes every time: stop with the file name, expected and found hash, exit 8.
faults "$WORK/corrupt.json" '[{"path": "'$S3'", "kind": "corrupt", "at": 1000, "times": -1}]'
start_hub corrupt-always --faults "$WORK/corrupt.json"
D3="$WORK/dl3"
fetch "$D3" --jobs 1
expect_rc 8 "persistent corruption"
expect_in "$ERR" "$S3" "mismatch error names the file"
expect_in "$ERR" "expected sha256 $(sha256_of "$REPO/$S3")" "mismatch error gives the hub hash"
expect_in "$ERR" "found sha256 " "mismatch error gives the found hash"
[ -f "$D3/$S3" ] && fail "a corrupt shard was renamed into place"
[ -f "$D3/$S3.part" ] && fail "the corrupt .part was kept"
cmp -s "$REPO/$S2" "$D3/$S2" || fail "files finished before the failure were lost"

# 4. A server that keeps failing: bounded retries, exit 7.
faults "$WORK/down.json" '[{"path": "'$S1'", "kind": "status", "status": 500, "times": -1}]'
start_hub down --faults "$WORK/down.json"
fetch "$WORK/dl4" --include "$S1" --retries 3
expect_rc 7 "server keeps failing"
expect_in "$ERR" "gave up after 3 attempts" "retries are bounded"
[ "$(content_requests "$S1" | wc -l)" = 3 ] || fail "expected exactly 3 attempts: $(content_requests "$S1")"
echo "fetch_faults_test: ok"
