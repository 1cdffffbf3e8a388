#!/usr/bin/env bash
# A state file continues only on the weights that produced it: a copy of
# the tiny model with one byte changed in a layer weight (the fingerprint
# used to cover only config, index, final norm and 64 KiB of lm_head, so the
# continuation silently matched neither model) is refused with exit 3
# "saved for a different model"; an unchanged copy in another directory
# continues it (fingerprint_every_weight_test covers the manifest's digests).
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
TOOL=k3-forward
prompt=$(cat "$TINY/prompt_ids.txt")
echo "$prompt" | "$BIN/k3-forward" "$TINY" --gen 3 --state-out "$work/s.k3s" > /dev/null 2>&1 ||
  { echo "saving the state failed"; exit 1; }
want=$(echo "5 6" | "$BIN/k3-forward" "$TINY" --gen 4 --state-in "$work/s.k3s" 2> /dev/null)

copy() {  # copy NAME: a writable copy of the tiny model
  mkdir -p "$work/$1" && cp "$TINY"/* "$work/$1/" && chmod u+w "$work/$1"/*
}
# flip MODEL TENSOR_SUBSTRING: flips the last byte of the first tensor whose name holds it.
flip() {
  python3 - "$1" "$2" <<'PY'
import json, os, struct, sys
d, part = sys.argv[1], sys.argv[2]
idx = json.load(open(os.path.join(d, "model.safetensors.index.json")))["weight_map"]
name = sorted(n for n in idx if part in n)[0]
path = os.path.join(d, idx[name])
with open(path, "r+b") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    begin, end = json.loads(f.read(n))[name]["data_offsets"]
    f.seek(8 + n + end - 1)
    b = f.read(1)
    f.seek(8 + n + end - 1)
    f.write(bytes([b[0] ^ 0x01]))
print(name)
PY
}

for part in layers.0.self_attn.b_proj experts.3.w2.weight_packed embed_tokens; do
  copy "m-$part"
  name=$(flip "$work/m-$part" "$part")
  bad "one byte of $name changed" 3 "this state was saved for a different model" -- \
    "$BIN/k3-forward" "$work/m-$part" --gen 4 --state-in "$work/s.k3s" < <(echo "5 6")
done

copy same
check "an unchanged copy continues the state" "$want" \
  "$(echo "5 6" | "$BIN/k3-forward" "$work/same" --gen 4 --state-in "$work/s.k3s" 2> /dev/null)"
finish state_other_weights_test
