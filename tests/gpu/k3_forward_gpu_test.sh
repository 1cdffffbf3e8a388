#!/usr/bin/env bash
# k3-forward --gpu on Mesa's lavapipe (its fma() is not fused: the exact
# emulation runs), validation layer on: the ids, the --logits file and the
# --state-out file of a 600-id prompt over the tiny model are cmp-equal to
# the CPU run's, at chunks of 300 and 600 tokens streaming and 450 resident
# (K3_PREFILL_CHUNK: more than the 256-row batch, so the layer-major prefill
# runs; the chunks of 300 holding each streamed layer whole; resident, the staged weights copied into device-local memory on
# the device), with MLA's latent caches kept on the device between passes
# (each row copied once) and the chunk's AttnRes block states kept there
# while the chunk runs (each copied once, the mixes reading them there; a
# spilled chunk's file not read back for them), and each layer's trunk
# weights kept there across the chunk's sub-batches (copied once a layer
# and chunk), and each KDA layer's state kept there across them (copied in
# and back once a layer and chunk; resident, the latent caches and block
# states in device-local twins, each row copied into them once), and
# continuing a --state-in conversation; the
# products did run on the device (its summary line counts them, and
# --quiet silences it); a device that is not there is refused with one
# line, and one lost mid-prompt ends the run with one.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
source "${K3_SOURCE_DIR:?}/tests/lib/prefill_runs.sh"
FWD="$BIN/k3-forward"
export K3_GPU_VALIDATION=1
prefill_ids "$work/ids.txt"
"$BIN/k3-pack" "$TINY" "$work/trunk" 2> "$work/pack.err" || { cat "$work/pack.err"; exit 1; }
STREAM=(--trunk "$work/trunk" --trunk-gb 0 --cache-gb 0)

# lavapipe's index among the Vulkan devices (the test fails without it).
lvp=$(vulkaninfo --summary 2> /dev/null | awk '/^GPU[0-9]+:/ { i = substr($1, 4) + 0 } /deviceName.*llvmpipe/ { print i; exit }')
holds "lavapipe is installed (mesa-vulkan-drivers)" "[ -n '$lvp' ]"
lvp=${lvp:-0}

run() {  # run NAME CHUNK FLAGS...
  local name=$1 chunk=$2; shift 2
  K3_PREFILL_CHUNK=$chunk "$FWD" "$TINY" --ids "$work/ids.txt" --ctx 700 --gen 4 --logits "$work/$name.logits" \
    --state-out "$work/$name.state" "$@" > "$work/$name.out" 2> "$work/$name.err"
  check "$name: exit" 0 "$?"
}

run cpu 600 "${STREAM[@]}"
# The chunk of 600 with its block states in a spill file (K3_PREFILL_SPILL);
# the chunks of 300 each holding every streamed layer whole
# (K3_PREFILL_HOLD, over row blocks), its sub-batches pieces of 256 rows,
# with the sequence state lent to each (K3_PREFILL_LEND_STATE: its MLA rows
# go to a file and back, the same rows: the device's copies stay, each row
# copied once below).
for chunk in 300 600; do
  hold=()
  [ "$chunk" = 300 ] && hold=(--block-mb 0.01)
  K3_PREFILL_LEND_STATE=$((chunk == 300)) K3_PREFILL_SPILL=$((chunk == 600)) K3_PREFILL_HOLD=$((chunk == 300)) \
    run "gpu$chunk" "$chunk" "${STREAM[@]}" "${hold[@]}" --gpu "$lvp" --stats-json "$work/gpu$chunk.json"
  same "gpu$chunk" cpu
  contains "gpu$chunk: products ran on lavapipe" "llvmpipe" "$(cat "$work/gpu$chunk.err")"
  holds "gpu$chunk: more than 0 products on the device" \
    "grep -Eq 'gpu $lvp \\(.*\\): [1-9][0-9]* matrix products' '$work/gpu$chunk.err'"
  contains "gpu$chunk: fma emulated" "fma emulated" "$(cat "$work/gpu$chunk.err")"
  holds "gpu$chunk: no validation errors" "! grep -q 'vulkan validation' '$work/gpu$chunk.err'"
done
# MLA's latent caches stay on the device from pass to pass: each of the
# prompt's 600 rows is copied there once per MLA layer (the layers and
# kv_lora_rank + rope from the safetensors headers), whatever the chunk;
# in chunks, the later passes find the earlier rows there.
row_bytes=$(python3 - "$TINY" << 'PY'
import glob, json, struct, sys
mla = stride = 0
for path in glob.glob(sys.argv[1] + "/*.safetensors"):
    with open(path, "rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    for name, t in header.items():
        if name.endswith("self_attn.kv_a_proj_with_mqa.weight"): mla, stride = mla + 1, max(stride, t["shape"][0])
print(mla * stride * 4)
PY
)
json() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['gpu'][sys.argv[2]])" "$work/$1.json" "$2"; }
for chunk in 300 600; do
  check "gpu$chunk: every latent row copied once" "$((600 * row_bytes))" "$(json "gpu$chunk" latent_upload_bytes)"
done
holds "gpu300: each layer held whole" "[ '$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['layer_hold']['held_layers'])" "$work/gpu300.json")' -gt 0 ]"
holds "gpu300: the second chunk found the first one's rows kept" \
  "[ '$(json gpu300 latent_kept_bytes)' -ge '$((300 * row_bytes))' ]"
# The chunk's AttnRes block states stay on the device while the chunk runs:
# each block's rows copied once, when it opens (every ceil(layers / block
# size) of them, each chunk), whatever the chunk; the layers' mixes read
# them there (layer i's first mix ceil(i / block size) blocks, its second
# floor(i / block size) + 1), and the head's mix all of them, for its rows.
geometry=$(python3 - "$TINY" << 'PY'
import json, sys
c = json.load(open(sys.argv[1] + "/config.json"))
c = c.get("text_config", c)
layers, size = c["num_hidden_layers"], c["attn_res_block_size"]
print(-(-layers // size), c["hidden_size"] * 4, sum(-(-i // size) + i // size + 1 for i in range(layers)),
      layers - c["first_k_dense_replace"])
PY
)
read -r blocks block_row layer_reads moe_layers <<< "$geometry"
for chunk in 300 600; do
  check "gpu$chunk: every block state row copied to the device once" "$((blocks * 600 * block_row))" \
    "$(json "gpu$chunk" block_upload_bytes)"
  head=$(($(json "gpu$chunk" block_kept_bytes) - layer_reads * 600 * block_row))
  holds "gpu$chunk: the layers' mixes and the head's read the kept blocks (head: $head bytes)" \
    "[ $head -gt 0 ] && [ $((head % (blocks * block_row))) -eq 0 ]"
done
# A layer's trunk weights go to the device once per layer and chunk: the
# chunk of 600 runs each product in three sub-batches (256 + 256 + 88 rows),
# the two later ones on the kept copies; each chunk of 300 in two (256 +
# 44), keeping them again, as many bytes in all as the chunk of 600 twice.
# Streamed, the trunk's buffers are reused from layer to layer: a kept copy
# trusted across layers would change the bits above.
kept600=$(json gpu600 weight_kept_bytes)
holds "gpu600: weights kept on the device" "[ '$kept600' -gt 0 ]"
check "gpu600: two sub-batches of three reuse them" "$((2 * kept600))" "$(json gpu600 weight_reused_bytes)"
check "gpu300: each chunk keeps them once" "$((2 * kept600))" "$(json gpu300 weight_kept_bytes)"
check "gpu300: one sub-batch of two reuses them" "$((2 * kept600))" "$(json gpu300 weight_reused_bytes)"
# Each KDA layer's state goes to the device once per chunk and comes back
# once (kept there across the layer's sub-batches: three at 600, two a
# chunk at 300), H*D*D floats (H: b_proj's rows, H*D: dt_bias's length).
state_bytes=$(python3 - "$TINY" << 'PY'
import glob, json, struct, sys
layers = heads = width = 0
for path in glob.glob(sys.argv[1] + "/*.safetensors"):
    with open(path, "rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    for name, t in header.items():
        if name.endswith("self_attn.dt_bias"): layers, width = layers + 1, t["shape"][0]
        if name.endswith("self_attn.b_proj.weight"): heads = t["shape"][0]
print(layers * width * (width // heads) * 4)
PY
)
for chunk in 300 600; do
  chunks=$((600 / chunk))
  check "gpu$chunk: each KDA state to the device once a layer and chunk" "$((chunks * state_bytes))" \
    "$(json "gpu$chunk" kda_state_upload_bytes)"
  check "gpu$chunk: and back once" "$((chunks * state_bytes))" "$(json "gpu$chunk" kda_state_download_bytes)"
done
# Spilled, the file is written as on the CPU (the blocks, then each MoE
# layer's shared-expert rows), but only the shared rows are read back: the
# mixes read the blocks on the device.
spill() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['prefill'][sys.argv[2]])" "$work/$1.json" "$2"; }
check "gpu600 spilled: the file written" "$(((blocks + moe_layers) * 600 * block_row))" \
  "$(spill gpu600 spill_written_bytes)"
check "gpu600 spilled: no block state read back" "$((moe_layers * 600 * block_row))" "$(spill gpu600 spill_read_bytes)"
# Resident, with an 8 KiB stage (K3_GPU_STAGE_BYTES): every product larger
# than that goes in row slices through the two staging slots, each copied
# on the device into device-local memory before its dispatch
# (K3_GPU_DEVICE_LOCAL_STAGING, the path of a discrete GPU without
# host-visible device-local memory), same bits.
K3_GPU_STAGE_BYTES=8192 K3_GPU_DEVICE_LOCAL_STAGING=1 run resident-gpu 450 --gpu "$lvp" --threads 2 \
  --stats-json "$work/resident-gpu.json"
same resident-gpu cpu
check "device-local staging: stats say so" device_local "$(json resident-gpu staging)"
# Each slice copied into device-local memory before its dispatch, but those
# on a layer's kept copies (copied there when first staged).
holds "device-local staging: every slice copied but the kept ones' reuses" \
  "[ '$(json resident-gpu device_local_copies)' -gt 0 ] && [ '$(json resident-gpu device_local_copies)' -lt '$(json resident-gpu dispatches)' ]"
holds "device-local staging: slices ran" "[ '$(json resident-gpu dispatches)' -gt '$(json resident-gpu products)' ]"
holds "device-local staging: no validation errors" "! grep -q 'vulkan validation' '$work/resident-gpu.err'"
check "resident: the layers' weights kept once, in slices" "$kept600" "$(json resident-gpu weight_kept_bytes)"
check "resident: the second sub-batch (256 + 194) reuses them" "$kept600" "$(json resident-gpu weight_reused_bytes)"
check "host-visible staging elsewhere" host_visible "$(json gpu300 staging)"
# The kept block states and latent caches in device-local twins, the mixes
# and the attention reading them there: each block state row and each
# latent row of the chunk of 450 copied into its twin once (the last 150
# rows, fewer than a sub-batch, run on the CPU); none where the device
# reads host-visible memory in place.
check "device-local staging: each block state row copied into its twin once" "$((blocks * 450 * block_row))" \
  "$(json resident-gpu block_twin_bytes)"
check "device-local staging: each latent row copied into its twin once" "$((450 * row_bytes))" \
  "$(json resident-gpu latent_twin_bytes)"
check "host-visible staging: no twins" "0 0 0" \
  "$(json gpu300 block_twin_bytes) $(json gpu300 latent_twin_bytes) $(json gpu300 row_twin_bytes)"
# The norms' and SiTU steps' rows go through the products' device-local
# twins, in and out, per call.
holds "device-local staging: the norms' and SiTU steps' rows copied through twins" \
  "[ '$(json resident-gpu row_twin_bytes)' -gt 0 ]"
# A conversation continued from a state file (--state-in): the loaded
# latent caches go to the device whole; the same bits as the CPU's
# continuation.
cut -d' ' -f1-300 "$work/ids.txt" > "$work/head.txt"
cut -d' ' -f301-600 "$work/ids.txt" > "$work/tail.txt"
"$FWD" "$TINY" --ids "$work/head.txt" --ctx 700 --state-out "$work/head.state" > /dev/null 2> "$work/head.err"
check "the first 300 ids' state: exit" 0 "$?"
cont() {  # cont NAME FLAGS...: the last 300 ids after the first 300's state
  local name=$1; shift
  K3_PREFILL_CHUNK=300 "$FWD" "$TINY" --ids "$work/tail.txt" --state-in "$work/head.state" --ctx 700 --gen 4 \
    --logits "$work/$name.logits" --state-out "$work/$name.state" "$@" > "$work/$name.out" 2> "$work/$name.err"
  check "$name: exit" 0 "$?"
}
cont cont-cpu "${STREAM[@]}"
cont quiet-gpu "${STREAM[@]}" --gpu "$lvp" --quiet
same quiet-gpu cont-cpu
holds "--state-in: the generated ids those of the whole prompt's run" "cmp -s '$work/quiet-gpu.out' '$work/cpu.out'"
check "--quiet: nothing on stderr, the device's line neither" 0 "$(stat -c %s "$work/quiet-gpu.err")"

# The device lost mid-prompt (K3_GPU_FAIL_AFTER): one line naming it, exit
# 6, and no --logits or --state-out file left behind.
bad "a device lost mid-prompt" 6 "the device was lost" -- env K3_PREFILL_CHUNK=600 K3_GPU_FAIL_AFTER=5 \
  "$FWD" "$TINY" --ids "$work/ids.txt" --ctx 700 --gen 4 --gpu "$lvp" --logits "$work/lost.logits" \
  --state-out "$work/lost.state" "${STREAM[@]}" --quiet
holds "a device lost: no logits file" "[ ! -e '$work/lost.logits' ]"
holds "a device lost: no state file" "[ ! -e '$work/lost.state' ]"
bad "a device that is not there" 2 "--gpu 99: there is no such Vulkan device" -- \
  "$FWD" "$TINY" --ids "$work/ids.txt" --gpu 99
bad "--gpu with --batch" 2 "--gpu" -- "$FWD" "$TINY" --batch "$work/ids.txt" --gpu
finish k3_forward_gpu_test
