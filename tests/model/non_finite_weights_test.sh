#!/usr/bin/env bash
# A fixture copy with one NaN or infinite weight is a model error: k3-forward
# exits 3 naming where the value first appears (a layer, the embedding rows,
# the logits) and writes no ids and no --logits file (--gen 0 included), at
# 1 and 2 threads; k3-pack refuses to pack it
# naming the tensor; k3-pack --check reports a NaN that reached trunk.bin.
set -u
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
prompt=$(cat "$K3_TEST_DATA/k3-tiny/prompt_ids.txt")

# poison.py DIR TENSOR ELEMENT HEX: writes the BF16/F32 value HEX
# (little-endian bytes of the element) into TENSOR at ELEMENT, in place.
cat > "$work/poison.py" <<'PY'
import json, struct, sys
d, name, element, value = sys.argv[1], sys.argv[2], int(sys.argv[3]), bytes.fromhex(sys.argv[4])
shard = json.load(open(d + "/model.safetensors.index.json"))["weight_map"][name]
with open(d + "/" + shard, "r+b") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    t = json.loads(f.read(n))[name]
    f.seek(8 + n + t["data_offsets"][0] + element * len(value))
    f.write(value)
PY
# refused NAME CODE NEEDLE -- command: exit CODE, the error as the last
# stderr line (after the tool's informational lines), nothing on stdout.
refused() {
  local name=$1 code=$2 needle=$3; shift 4
  "$@" > "$work/out" 2> "$work/err"; local rc=$?
  check "$name exit" "$code" "$rc"
  contains "$name message" "$needle" "$(tail -1 "$work/err")"
  check "$name stdout empty" 0 "$(stat -c %s "$work/out")"
}
copy() {  # copy NAME: a writable copy of the fixture
  cp -r "$K3_TEST_DATA/k3-tiny" "$work/$1"
  chmod -R u+w "$work/$1"
  echo "$work/$1"
}

# NaN in layer 2's attention output projection (BF16 0x7fc0).
m=$(copy nan-layer)
python3 "$work/poison.py" "$m" language_model.model.layers.2.self_attn.o_proj.weight 5 c07f
refused "NaN weight: --logits --gen 0" 3 "NaN in the output of layer 2" -- \
  bash -c 'echo "$1" | "$2" "$3" --gen 0 --logits "$4"' _ "$prompt" "$BIN/k3-forward" "$m" "$work/l.safetensors"
holds "no logits file written" '[ ! -e "$work/l.safetensors" ]'
refused "NaN weight: generation" 3 "NaN in the output of layer 2" -- \
  bash -c 'echo "$1" | "$2" "$3" --gen 5' _ "$prompt" "$BIN/k3-forward" "$m"
contains "the message says what to do" "k3-fetch-verify verify --full" "$(cat "$work/err")"
for threads in 1 2; do
  refused "NaN weight, $threads thread(s)" 3 "NaN in the output of layer 2" -- \
    bash -c 'echo "$1" | "$2" "$3" --gen 3 --threads $4' _ "$prompt" "$BIN/k3-forward" "$m" "$threads"
done

# k3-pack refuses the poisoned model, naming the tensor; no trunk appears.
refused "k3-pack of a NaN weight" 3 \
  "tensor 'language_model.model.layers.2.self_attn.o_proj.weight' holds 1 NaN or infinite value (first at element 5)" \
  -- "$BIN/k3-pack" "$m" "$work/t-nan"
holds "k3-pack wrote no trunk.json" '[ ! -e "$work/t-nan/trunk.json" ]'

# +Inf (BF16 0x7f80) in the embedding row of the prompt's first token.
m=$(copy inf-embed)
first=$(echo "$prompt" | awk '{print $1}')
hidden=$(python3 -c "import json; c=json.load(open('$m/config.json')); print(c.get('text_config', c)['hidden_size'])")
python3 "$work/poison.py" "$m" language_model.model.embed_tokens.weight $((first * hidden + 3)) 807f
refused "Inf embedding row" 3 "+Inf in the embedding rows (token position 0, element 3)" -- \
  bash -c 'echo "$1" | "$2" "$3" --gen 2' _ "$prompt" "$BIN/k3-forward" "$m"

# -Inf in lm_head: the logits are where it appears.
m=$(copy inf-head)
python3 "$work/poison.py" "$m" language_model.lm_head.weight 7 80ff
refused "-Inf in lm_head" 3 "in the logits (the head)" -- \
  bash -c 'echo "$1" | "$2" "$3" --gen 0 --logits "$4"' _ "$prompt" "$BIN/k3-forward" "$m" "$work/l2.safetensors"
holds "no logits file written (head)" '[ ! -e "$work/l2.safetensors" ]'

# A NaN that reaches trunk.bin after packing: k3-pack --check names the tensor.
m=$(copy nan-trunk)
"$BIN/k3-pack" "$m" "$work/t" 2>/dev/null
offset=$(python3 -c "
import json; t=json.load(open('$work/t/trunk.json'))
print(next(x['offset'] for s in t['sections'] for x in s['tensors'] if x['name']=='language_model.model.layers.0.mlp.gate_proj.weight'))" 2>/dev/null)
if [ -n "$offset" ]; then
  printf '\xc0\x7f' | dd of="$work/t/trunk.bin" bs=1 seek=$((offset + 8)) conv=notrunc status=none
  "$BIN/k3-pack" --check "$work/t" "$m" 2> "$work/check.err"; rc=$?
  check "k3-pack --check exit" 8 "$rc"
  contains "k3-pack --check names the NaN tensor" \
    "tensor 'language_model.model.layers.0.mlp.gate_proj.weight' holds 1 NaN or infinite values" "$(cat "$work/check.err")"
else
  holds "layer 0 has a dense gate_proj in the tiny model" false
fi
finish non_finite_weights_test
