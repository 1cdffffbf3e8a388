# k3-fetch-verify verify on a downloaded checkpoint and on damaged copies:
# a truncated shard, a flipped byte (--full), a missing shard, a damaged
# header, a missing manifest; one line per problem and exit 8, never "ok"
# when a check could not run.
source "$K3_SOURCE_DIR/tests/fetch/fake_hub_lib.sh"

S2=model-00002-of-00005.safetensors
S3=model-00003-of-00005.safetensors
S4=model-00004-of-00005.safetensors

start_hub verify
GOOD="$WORK/good"
fetch "$GOOD"
expect_rc 0 "download for the verify tests"
stop_hub

fresh() {  # fresh NAME: a copy of the good download
  rm -rf "$WORK/$1"
  cp -a "$GOOD" "$WORK/$1"
  echo "$WORK/$1"
}

verify "$GOOD"
expect_rc 0 "quick verify of a good download"
verify "$GOOD" --full --threads 2
expect_rc 0 "full verify of a good download"
expect_in "$ERR" "GB/s" "full verify reports its hashing rate"

# Truncated shard: caught by the quick check (size against the manifest, and the header bounds).
D=$(fresh truncated)
truncate -s -100 "$D/$S3"
verify "$D"
expect_rc 8 "truncated shard"
expect_in "$OUT" "$S3: size: expected $(stat -c %s "$REPO/$S3") bytes, found $(( $(stat -c %s "$REPO/$S3") - 100 )) bytes" \
  "truncation line"
expect_in "$OUT" "$S3: header:" "truncation caught by the header bounds check too"
rm "$D/.k3-manifest.json"
verify "$D" --no-manifest
expect_rc 8 "truncated shard without manifest"
expect_in "$OUT" "past the end of the file" "header bounds check without manifest"

# A flipped byte inside tensor data, mtime kept: only --full can see it.
D=$(fresh flipped)
printf '\x55' | dd of="$D/$S2" bs=1 seek=600000 conv=notrunc status=none
touch -r "$GOOD/$S2" "$D/$S2"
verify "$D" --full
expect_rc 8 "flipped byte"
expect_in "$OUT" "$S2: sha256 (hub LFS hash): expected $(sha256_of "$REPO/$S2"), found $(sha256_of "$D/$S2")" \
  "flipped-byte sha256 line"
expect_in "$OUT" "$S2: xxh3-128 (manifest)" "flipped-byte xxh3 line"
[ "$(echo "$OUT" | grep -c .)" = 2 ] || fail "expected exactly the two hash lines for one flipped byte: $OUT"

# A NaN weight (BF16 0x7fc0) in a shard: --full names the tensor as well as the hash.
D=$(fresh nan)
read -r nan_shard nan_offset < <("$PYTHON" - "$D" <<'PY'
import json, struct, sys
d, name = sys.argv[1], "language_model.model.layers.1.self_attn.kv_a_proj_with_mqa.weight"
wm = json.load(open(d + "/model.safetensors.index.json"))["weight_map"]
name = name if name in wm else next(k for k in wm if k.endswith("o_proj.weight"))
raw = open(d + "/" + wm[name], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
print(wm[name], 8 + n + json.loads(raw[8:8 + n])[name]["data_offsets"][0] + 2 * 11)
PY
)
printf '\xc0\x7f' | dd of="$D/$nan_shard" bs=1 seek="$nan_offset" conv=notrunc status=none
verify "$D" --full
expect_rc 8 "NaN weight"
expect_in "$OUT" "$nan_shard: NaN or infinite weights: expected finite floating-point tensors, found tensor '" \
  "NaN weight line"
expect_in "$OUT" "holds 1 NaN or infinite value (first at element 11)" "NaN weight element"

# A missing shard.
D=$(fresh missing)
rm "$D/$S4"
verify "$D"
expect_rc 8 "missing shard"
expect_in "$OUT" "$S4: missing" "missing-shard line"

# A damaged header: the JSON no longer parses.
D=$(fresh header)
printf '@@@@' | dd of="$D/$S3" bs=1 seek=20 conv=notrunc status=none
verify "$D"
expect_rc 8 "damaged header"
expect_in "$OUT" "$S3: header: expected a valid safetensors header" "damaged-header line"

# A shard whose header no longer lists a tensor the index assigns to it.
D=$(fresh index)
"$PYTHON" - "$D/model.safetensors.index.json" "$S4" <<'PY'
import json, sys
p, shard = sys.argv[1], sys.argv[2]
idx = json.load(open(p))
idx["weight_map"]["language_model.model.layers.99.bogus.weight"] = shard
json.dump(idx, open(p, "w"))
PY
verify "$D" --no-manifest
expect_rc 8 "tensor missing from its shard"
expect_in "$OUT" "$S4: tensor missing: expected 'language_model.model.layers.99.bogus.weight'" "missing-tensor line"

# No manifest: the checks that need it are named, and the run fails unless --no-manifest.
D=$(fresh nomanifest)
rm "$D/.k3-manifest.json"
verify "$D"
expect_rc 8 "no manifest"
expect_in "$OUT" "not checked: sizes against the manifest" "no-manifest names the skipped check"
case "$OUT" in *ok:*) fail "reported ok although checks could not run: $OUT" ;; esac
verify "$D" --full --no-manifest
expect_rc 8 "--full without a manifest cannot hash-check"
expect_in "$OUT" "not checked: --full hashes" "--full without manifest"
verify "$D" --no-manifest
expect_rc 0 "--no-manifest accepts the structural checks"

# Kimi-K3's published totals, on a K3-shaped directory of 96 sparse shards
# (valid headers, apparent sizes adding up to the real checkpoint's bytes).
K="$WORK/k3shape"
mkdir -p "$K"
"$PYTHON" - "$K" <<'PY'
import json, os, struct, sys
d = sys.argv[1]
total, n = 1560936091448, 96
wm = {}
for k in range(1, n + 1):
    name = "model-%05d-of-%05d.safetensors" % (k, n)
    hdr = json.dumps({"t%d" % k: {"dtype": "U8", "shape": [16], "data_offsets": [0, 16]}}).encode()
    hdr += b" " * (-len(hdr) % 8)
    with open(os.path.join(d, name), "wb") as f:
        f.write(struct.pack("<Q", len(hdr)) + hdr + bytes(16))
        f.truncate(total // n + (total % n if k == n else 0))
    wm["t%d" % k] = name
json.dump({"metadata": {"total_size": 16 * n}, "weight_map": wm}, open(os.path.join(d, "model.safetensors.index.json"), "w"))
json.dump({"model_type": "kimi_k3", "text_config": {"model_type": "kimi_linear"}}, open(os.path.join(d, "config.json"), "w"))
PY
verify "$K" --no-manifest
expect_rc 0 "K3-shaped directory with the published totals"
expect_in "$ERR" "checked: Kimi-K3 totals" "K3 totals check ran"
truncate -s -1 "$K/model-00096-of-00096.safetensors"
verify "$K" --no-manifest
expect_rc 8 "K3 total off by one byte"
expect_in "$OUT" "Kimi-K3 total shard bytes: expected 1560936091448 bytes in 96 files, found 1560936091447 bytes" \
  "K3 totals line"
rm "$K/model-00042-of-00096.safetensors"
verify "$K" --no-manifest
expect_rc 8 "K3 shard missing"
expect_in "$OUT" "model-00042-of-00096.safetensors: missing" "K3 missing shard line"

# Not a directory: usage error.
verify "$WORK/nope"
expect_rc 2 "missing directory"
echo "fetch_verify_test: ok"
