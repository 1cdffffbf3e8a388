# k3-fetch-verify download against a local fake hub: a complete download is
# byte-identical and verifies; metadata-first then the rest; finished files are
# never requested again; a bad or missing token is a clear exit 7; a commit
# change is refused; too little free space is refused before any transfer.
source "$K3_SOURCE_DIR/tests/fetch/fake_hub_lib.sh"

start_hub basic
D="$WORK/dl"

# Step 1: metadata only.
fetch "$D" --include '*.json' --include 'tiktoken.model' --jobs 2
expect_rc 0 "metadata download"
[ -f "$D/config.json" ] && [ -f "$D/model.safetensors.index.json" ] && [ -f "$D/tiktoken.model" ] ||
  fail "metadata files missing after --include download"
ls "$D"/model-*.safetensors >/dev/null 2>&1 && fail "--include '*.json' also fetched shards"
grep -q 'tree/.*cursor=' "$LOG" || fail "the listing was not paged (no cursor request in the log)"
meta_requests=$(grep -c '/resolve/' "$LOG")

# Step 2: everything else; the metadata is not requested again.
: > "$LOG"
fetch "$D" --jobs 3
expect_rc 0 "full download"
same_as_repo "$D"
[ -z "$(content_requests config.json)" ] || fail "config.json was requested again: $(content_requests config.json)"
[ -n "$(content_requests model-00003-of-00005.safetensors)" ] || fail "shard 3 was never requested"
grep -q 'auth=ok' "$LOG" || fail "requests did not carry the bearer token"
grep -q 'range=bytes' "$LOG" && fail "a fresh download used Range requests: $(grep range=bytes "$LOG")"
ls "$D"/*.part >/dev/null 2>&1 && fail ".part files left after a complete download"

# The manifest pins the commit and records the hub's sha256 for shards.
m="$D/.k3-manifest.json"
expect_in "$(cat "$m")" '"commit": "3f2a9c1e0b7d4a65e8f1c2b3a4d5e6f708192a3b"' "manifest commit"
expect_in "$(cat "$m")" "$(sha256_of "$REPO/model-00002-of-00005.safetensors")" "manifest sha256 of shard 2"

verify "$D" --full
expect_rc 0 "verify --full after download"
expect_in "$OUT" "ok:" "verify --full output"

# Step 3: a re-run requests no file content at all.
: > "$LOG"
fetch "$D"
expect_rc 0 "re-run"
if grep -E '/resolve/|/cdn/' "$LOG"; then fail "finished files were requested again"; fi
expect_in "$ERR" "11 already complete" "re-run summary"

# A file edited locally is noticed (size/mtime changed), checked, and only it is fetched again.
printf 'x' | dd of="$D/model-00003-of-00005.safetensors" bs=1 seek=5000 conv=notrunc status=none
: > "$LOG"
fetch "$D"
expect_rc 0 "re-run after a local edit"
same_as_repo "$D"
[ "$(grep -cE '/resolve/|/cdn/' "$LOG")" = 2 ] || fail "expected one resolve + one CDN request, got: $(cat "$LOG")"
[ -n "$(content_requests model-00003-of-00005.safetensors)" ] || fail "the edited shard was not fetched again"

# Authentication: a wrong token, and no token, exit 7 with a clear message.
HF_TOKEN_OVERRIDE="hf_wrong" fetch "$WORK/auth"
expect_rc 7 "wrong token"
expect_in "$ERR" "authentication failed" "wrong-token message"
expect_in "$ERR" "HF_TOKEN" "wrong-token message names HF_TOKEN"
[ "$(echo "$ERR" | grep -v 'using the Hub token from' | wc -l)" = 1 ] || fail "auth error is not one line: $ERR"
HF_TOKEN_OVERRIDE="" fetch "$WORK/auth"
expect_rc 7 "missing token"
set +e
HF_ENDPOINT="$ENDPOINT" HF_TOKEN=hf_wrong "$BIN" download "$WORK/auth" --token "$TOKEN" --include config.json 2>"$WORK/err.txt"
RC=$?
set -e
expect_rc 0 "--token overrides HF_TOKEN"

# Not enough free space: refused before any transfer, exit 6.
: > "$LOG"
K3_FETCH_FREE_BYTES=1000 fetch "$WORK/small"
expect_rc 6 "free-space check"
expect_in "$ERR" "free space" "free-space message"
if grep -E '/resolve/|/cdn/' "$LOG"; then fail "files were requested despite too little free space"; fi

# The branch moved to another commit: refuse to mix commits in one directory.
start_hub moved --commit 1111111111111111111111111111111111111111
fetch "$D"
expect_rc 2 "commit change"
expect_in "$ERR" "--revision 3f2a9c1e0b7d4a65e8f1c2b3a4d5e6f708192a3b" "commit-change advice"

# Usage errors exit 2.
set +e
"$BIN" download >/dev/null 2>&1; RC=$?
set -e
expect_rc 2 "download without DIR"
set +e
"$BIN" download a/b "$WORK/x" --jobs 0 >/dev/null 2>&1; RC=$?
set -e
expect_rc 2 "--jobs 0"
echo "fetch_download_test: ok"
