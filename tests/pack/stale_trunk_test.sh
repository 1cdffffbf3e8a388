#!/usr/bin/env bash
# A stale trunk through the real binaries: after a shard is rewritten in
# place with the same size, k3-forward refuses the trunk before any token
# (exit 3, the shard named, the way out given), k3-doctor fails its trunk
# check as stale, k3-pack --check exits 8; k3-pack --refresh refuses (exit 8)
# because the trunk tensors did change, and after a re-pack all is well. A
# shard whose modification time alone changed is refused the same way, and
# k3-pack --refresh records it (exit 0) so k3-forward runs again with the
# golden output.
set -u
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"

m=$work/m t=$work/t
cp -r "$K3_TEST_DATA/k3-tiny" "$m"
chmod -R u+w "$m"
prompt=$(cat "$m/prompt_ids.txt")
"$BIN/k3-pack" "$m" "$t" 2> "$work/pack.err"; rc=$?
check "pack exit" 0 "$rc"
want=$(echo "$prompt" | "$BIN/k3-forward" "$m" --trunk "$t" --gen 4 2> /dev/null)
check "packed trunk runs" 4 "$(echo "$want" | wc -l)"
sleep 0.05

# The shard and offset of a layer-1 attention weight (a trunk tensor).
read -r shard offset < <(python3 - "$m" <<'PY'
import json, struct, sys
d = sys.argv[1]
name = "language_model.model.layers.1.self_attn.o_proj.weight"
shard = json.load(open(d + "/model.safetensors.index.json"))["weight_map"][name]
raw = open(d + "/" + shard, "rb").read(8)
n = struct.unpack("<Q", raw)[0]
h = json.loads(open(d + "/" + shard, "rb").read(8 + n)[8:])
print(shard, 8 + n + h[name]["data_offsets"][0])
PY
)
size=$(stat -c %s "$m/$shard")
# Rewrite 2 bytes in place (same size, same header).
printf '\x11\x22' | dd of="$m/$shard" bs=1 seek=$((offset + 20)) conv=notrunc status=none
check "same size after the rewrite" "$size" "$(stat -c %s "$m/$shard")"

TOOL=k3-forward bad "rewritten shard: k3-forward" 3 "$shard was modified after the trunk was packed" -- \
  bash -c 'echo "$1" | "$2" "$3" --trunk "$4" --gen 4' _ "$prompt" "$BIN/k3-forward" "$m" "$t"
contains "k3-forward says how to re-check" "k3-pack --refresh $t $m" "$(cat "$work/err")"
"$BIN/k3-doctor" --no-probe --json --model "$m" --trunk "$t" > "$work/doc.json" 2> /dev/null
match=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(next(c['details']['match'] for c in d['sections']['checkpoint'] if c['name']=='trunk'))" "$work/doc.json")
check "k3-doctor calls the trunk stale" stale "$match"
"$BIN/k3-pack" --check "$t" "$m" 2> "$work/check.err"; rc=$?
check "k3-pack --check exit" 8 "$rc"
contains "k3-pack --check names the layer" "layer.1: the checkpoint's tensors differ" "$(cat "$work/check.err")"
"$BIN/k3-pack" --refresh "$t" "$m" 2> "$work/refresh.err"; rc=$?
check "k3-pack --refresh of changed weights exit" 8 "$rc"
contains "k3-pack --refresh names the layer" "layer.1" "$(cat "$work/refresh.err")"
TOOL=k3-forward bad "still refused after a failed refresh" 3 "may be stale" -- \
  bash -c 'echo "$1" | "$2" "$3" --trunk "$4" --gen 4' _ "$prompt" "$BIN/k3-forward" "$m" "$t"

# Re-pack: accepted, and the output follows the changed weights' trunk.
"$BIN/k3-pack" "$m" "$t" 2> /dev/null; rc=$?
check "re-pack exit" 0 "$rc"
echo "$prompt" | "$BIN/k3-forward" "$m" --trunk "$t" --gen 4 > /dev/null 2>&1; rc=$?
check "re-packed trunk runs" 0 "$rc"

# Only the modification time changes: refused, then refreshed.
sleep 0.05
touch "$m/$shard"
TOOL=k3-forward bad "touched shard: k3-forward" 3 "$shard was modified after the trunk was packed" -- \
  bash -c 'echo "$1" | "$2" "$3" --trunk "$4" --gen 4' _ "$prompt" "$BIN/k3-forward" "$m" "$t"
"$BIN/k3-pack" --check "$t" "$m" 2> "$work/check.err"; rc=$?
check "touched: k3-pack --check exit" 8 "$rc"
contains "touched: k3-pack --check suggests --refresh" "every section matches the checkpoint" "$(cat "$work/check.err")"
"$BIN/k3-pack" --refresh "$t" "$m" 2> "$work/refresh.err"; rc=$?
check "touched: k3-pack --refresh exit" 0 "$rc"
contains "touched: refresh reports" "trunk.json now records the shards" "$(cat "$work/refresh.err")"
echo "$prompt" | "$BIN/k3-forward" "$m" --trunk "$t" --gen 4 > "$work/ids" 2> /dev/null; rc=$?
check "refreshed trunk runs" 0 "$rc"
"$BIN/k3-pack" --check "$t" "$m" 2> /dev/null; rc=$?
check "refreshed trunk passes --check" 0 "$rc"
finish stale_trunk_test
