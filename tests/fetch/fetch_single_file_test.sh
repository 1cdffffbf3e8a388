# k3-fetch-verify on a repository shaped like Inferact/Kimi-K3-DSpark: no
# model.safetensors.index.json, one model.safetensors beside config.json and
# inert files. It downloads at a pinned revision, verifies (quick and
# --full), names the draft's next step (--draft, not k3-pack), loads as a
# draft; a corrupted transfer, a flipped byte and a truncated file are refused
# with exit 8.
source "$K3_SOURCE_DIR/tests/fetch/fake_hub_lib.sh"

DRAFT="${K3_TEST_DATA:?}/k3-tiny-dspark"
REV=cf6b8244620e7ea4b0651d214f28e89eac75bed6
HUB_REPO_NAME="Inferact/Kimi-K3-DSpark"
rm -rf "${REPO:?}"/*
cp "$DRAFT"/{config.json,model.safetensors} "$REPO/"
echo "Kimi K3 License (test copy)" > "$REPO/LICENSE"
echo "# Kimi-K3-DSpark (test copy)" > "$REPO/README.md"

dspark() {  # dspark DIR [flags]: download the draft repository at the pinned revision
  local dir="$1"
  shift
  fetch "$dir" --revision "$REV" "$@"
}
fetch() {  # the lib's fetch with the repository named (download REPO DIR)
  local dir="$1"
  shift
  set +e
  HF_ENDPOINT="$ENDPOINT" HF_TOKEN="$TOKEN" timeout 60 "$BIN" download "$HUB_REPO_NAME" "$dir" \
    --retry-wait 0.05 --stall-timeout 2 --progress-interval 1 "$@" > "$WORK/out.txt" 2> "$WORK/err.txt"
  RC=$?
  set -e
  OUT="$(cat "$WORK/out.txt")"
  ERR="$(cat "$WORK/err.txt")"
}

start_hub dspark --commit "$REV"
D="$WORK/k3draft"
dspark "$D"
expect_rc 0 "download of a single-file repository"
same_as_repo "$D"
[ -e "$D/model.safetensors.index.json" ] && fail "an index appeared that the hub does not have"
expect_in "$(cat "$D/.k3-manifest.json")" "\"commit\": \"$REV\"" "manifest pins the revision"
expect_in "$(cat "$D/.k3-manifest.json")" "$(sha256_of "$REPO/model.safetensors")" "manifest sha256 of the weights"
expect_in "$ERR" "next: add --draft $D" "download's next step is --draft"
case "$ERR" in *k3-pack*) fail "download of a draft suggests k3-pack: $ERR" ;; esac

verify "$D"
expect_rc 0 "quick verify of the draft"
expect_in "$OUT" "ok: $D: 1 shards, $(stat -c %s "$REPO/model.safetensors") bytes" "verify counts the one file"
expect_in "$ERR" "single-file checkpoint" "verify says it checked the single file"
expect_in "$ERR" "next: add --draft $D" "verify's next step is --draft"
verify "$D" --full
expect_rc 0 "full verify of the draft"

# What was downloaded loads as the draft of the tiny model.
set +e
"$K3_BIN_DIR/k3-forward" "$TINY" --draft "$D" --gen 3 < "$TINY/prompt_ids.txt" > "$WORK/ids" 2> "$WORK/fwd.err"
RC=$?
set -e
ERR="$(cat "$WORK/fwd.err")"
expect_rc 0 "k3-forward --draft on the downloaded draft"
expect_in "$ERR" "draft:" "the draft ran"

# A flipped byte in the weights, mtime kept: --full refuses it.
cp -a "$D" "$WORK/flipped"
printf '\x55' | dd of="$WORK/flipped/model.safetensors" bs=1 seek=600000 conv=notrunc status=none
touch -r "$D/model.safetensors" "$WORK/flipped/model.safetensors"
verify "$WORK/flipped" --full
expect_rc 8 "flipped byte in model.safetensors"
expect_in "$OUT" "model.safetensors: sha256 (hub LFS hash): expected $(sha256_of "$REPO/model.safetensors")" \
  "flipped byte named"

# A truncated file: the quick check sees the size and the header's bounds.
cp -a "$D" "$WORK/short"
truncate -s -100 "$WORK/short/model.safetensors"
verify "$WORK/short"
expect_rc 8 "truncated model.safetensors"
expect_in "$OUT" "model.safetensors: header:" "header bounds of the single file"
rm "$WORK/short/.k3-manifest.json"
verify "$WORK/short" --no-manifest
expect_rc 8 "truncated model.safetensors without manifest"
expect_in "$OUT" "past the end of the file" "header bounds without manifest"

# A transfer corrupted every time: never put in place, exit 8.
faults "$WORK/corrupt.json" '[{"path": "model.safetensors", "kind": "corrupt", "at": 1000, "times": -1}]'
start_hub corrupt --faults "$WORK/corrupt.json" --commit "$REV"
dspark "$WORK/bad"
expect_rc 8 "a corrupted transfer of model.safetensors"
expect_in "$ERR" "model.safetensors" "the corrupted file is named"
[ -f "$WORK/bad/model.safetensors" ] && fail "a corrupt model.safetensors was put in place"

echo "fetch_single_file_test: ok"
