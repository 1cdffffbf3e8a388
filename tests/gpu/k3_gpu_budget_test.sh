#!/usr/bin/env bash
# --gpu-mb and the device's figures, on Mesa's lavapipe over the tiny model:
# the plan's device bytes equal GpuBackend's buffers grown to the
# checkpoint's largest product over the chunk's rows and the MLA latent
# caches the attention keeps over the context, with a 64 KiB stage
# (K3_GPU_STAGE_BYTES) so the head's weights go through both staging slots,
# and the chunk's AttnRes block states and the largest layer's trunk weights
# kept there, computed here from the safetensors headers; a budget of exactly that runs (its ids the CPU's,
# slices overlapped, every block state copied once), a byte less keeps one
# block state fewer (the same ids), a byte less than the products' part is
# refused at plan time with one line naming --gpu-mb (exit 6, k3-forward,
# k3-chat and k3-serve alike); --stats-json's "gpu" counts the products (as the
# summary line does), the norms, SiTU steps, AttnRes mixes and the KDA
# layers' norms and gates run on the device, and a peak
# within the plan. Staged into device-local memory (as on a discrete GPU),
# the plan counts the device-local twins of the latent caches and the block
# states, and a budget of exactly that runs with each row copied into its
# twin once. A device that runs out of
# memory mid-prompt ends the run with one line, exit 6, the saved
# conversation it was continuing unchanged and no output file written.
set -uo pipefail
source "${K3_SOURCE_DIR:?}/tests/lib/check.sh"
FWD="$BIN/k3-forward"
export K3_GPU_VALIDATION=1 K3_PREFILL_CHUNK=300 K3_GPU_STAGE_BYTES=65536
lvp=$(vulkaninfo --summary 2> /dev/null | awk '/^GPU[0-9]+:/ { i = substr($1, 4) + 0 } /deviceName.*llvmpipe/ { print i; exit }')
holds "lavapipe is installed (mesa-vulkan-drivers)" "[ -n '$lvp' ]"
lvp=${lvp:-0}
awk 'BEGIN { for (i = 0; i < 300; ++i) printf "%d ", (i * 7919 + 13) % 8192; print "" }' > "$work/ids.txt"
awk 'BEGIN { for (i = 0; i < 300; ++i) printf "%d ", (i * 104729 + 5) % 8192; print "" }' > "$work/more.txt"

# The largest product of the tiny checkpoint: every 2-D BF16 matrix but the
# embedding, every MXFP4 one (packed [out, in/2], scales [out, in/32]);
# buffers of weights + 4, scales + 4 (two of each, of one slice: the stage,
# or one BF16 row of the widest if larger, at most the product; its scales
# 1/16 of it, at most the largest), rows x cols and rows x out floats. The
# KDA recurrence's: H heads (b_proj's rows) of D (dt_bias is H*D): a state
# of H*D*D floats, rows x (4*H*D + H) in, rows x H*D out. The AttnRes
# mixes share the activation buffers, each grown to the larger need: V
# values a row (ceil(layers / block size) block states and p) of the hidden
# width, the key weight's norm and BF16 projection in; the mixed rows and V
# scores a row out. The latent caches the attention keeps: one sequence x
# the MLA layers (one kv_a_proj_with_mqa each, kv_lora_rank + rope rows) x
# the context's 302 positions (300 ids and 2 generated) of floats, + 4 bytes.
# The chunk's block states kept on the device: V - 1 block states of the
# chunk's rows, as far as the budget leaves room (never refused for them).
need=$(python3 - "$TINY" 300 65536 302 << 'PY'
import glob, json, struct, sys
config = json.load(open(sys.argv[1] + "/config.json"))
config = config.get("text_config", config)
hidden = config["hidden_size"]
values = -(-config["num_hidden_layers"] // config["attn_res_block_size"]) + 1
w = s = cols = outs = heads = width = mla = stride = 0
layers, kept = {}, 0
for path in glob.glob(sys.argv[1] + "/*.safetensors"):
    with open(path, "rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    for name, t in header.items():
        if name == "__metadata__": continue
        if name.endswith("self_attn.dt_bias"): width = max(width, t["shape"][0])
        if len(t["shape"]) != 2: continue
        size = t["data_offsets"][1] - t["data_offsets"][0]
        at = name.find("model.layers.")
        if at >= 0 and ".experts." not in name and (
                (t["dtype"] == "BF16" and name.endswith(".weight")) or name.endswith((".weight_packed", ".weight_scale"))):
            # The products the chunk runs, each in one slice of the 64 KiB
            # stage here, and MLA's kv_b (read whole by its attention); not
            # the AttnRes keys (copied with each mix's values).
            if not name.endswith("_res_proj.weight"):
                assert size <= 65536 or name.endswith("kv_b_proj.weight")
                layer = int(name[at + len("model.layers."):].split(".")[0])
                layers[layer] = layers.get(layer, 0) + max(size + 4, 16)
                kept += size
        if t["dtype"] == "BF16" and not name.endswith("embed_tokens.weight"):
            w, outs, cols = max(w, size), max(outs, t["shape"][0]), max(cols, t["shape"][1])
        elif name.endswith(".weight_packed"):
            w, outs, cols = max(w, size), max(outs, t["shape"][0]), max(cols, 2 * t["shape"][1])
        elif name.endswith(".weight_scale"):
            s = max(s, size)
        if name.endswith("self_attn.b_proj.weight"): heads = max(heads, t["shape"][0])
        if name.endswith("self_attn.kv_a_proj_with_mqa.weight"): mla, stride = mla + 1, max(stride, t["shape"][0])
rows, stage, context = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
assert mla > 0 and stride > 0, "the tiny model has MLA layers"
assert w > stage, "the stage must slice the largest product"
piece = min(w, max(stage, 2 * cols))
scale_piece = min(s, piece // 16)
kda = width * (width // heads) * 4 + rows * (4 * width + heads) * 4 + rows * width * 4
mix_in = 4 * (hidden + (hidden + 1) // 2 + values * rows * hidden)
mix_out = 4 * (rows * hidden + rows * values)
staging = 2 * max(piece + 4, 16) + (2 * max(scale_piece + 4, 16) if s else 0)
rest = (max(rows * cols * 4, mix_in, 16) + max(rows * outs * 4, mix_out, 16) + kda
        + mla * context * stride * 4 + 4)
blocks = max(4 * (values - 1) * rows * hidden, 16)
# And staged into device-local memory: each slot's weights and scales, and
# the products' activations in and out, twice; the latent caches twice (the
# device-local twin, and the host-visible buffer their new rows go through,
# as large at most); the block states' twin and one block on the host.
layer = max(layers.values())
local = (2 * staging + rest + max(rows * cols * 4, 16) + max(rows * outs * 4, 16)
         + mla * context * stride * 4 + 4)
blocks_local = blocks + max(4 * rows * hidden, 16)
print(staging + rest + blocks + layer, staging + rest, local, blocks, rows * hidden * 4, layer, kept,
      local + blocks_local + layer, mla * stride * 4)
PY
)
read -r need rest rest_local blocks block_bytes layer kept need_local latent_row <<< "$need"
mb() { python3 -c "print(repr($1 / 1e6))"; }
run() {  # run NAME FLAGS...
  local name=$1; shift
  "$FWD" "$TINY" --ids "$work/ids.txt" --gen 2 "$@" > "$work/$name.out" 2> "$work/$name.err"
  check "$name: exit" 0 "$?"
}
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['gpu'][sys.argv[2]])" "$work/$1.json" "$2"; }

run cpu
run exact --gpu "$lvp" --gpu-mb "$(mb "$need")" --stats-json "$work/exact.json"
holds "a budget of exactly the plan: same ids" "cmp -s '$work/exact.out' '$work/cpu.out'"
contains "the plan line names the device bytes" "device $lvp: " "$(cat "$work/exact.err")"
check "stats: the plan's device bytes, by formula" "$need" "$(json exact plan_bytes)"
products=$(sed -nE "s/.*gpu $lvp \\(.*\\): ([0-9]+) matrix products.*/\\1/p" "$work/exact.err")
check "stats: products, as the summary line counts them" "${products:-none}" "$(json exact products)"
holds "stats: products ran" "[ '$(json exact products)' -gt 0 ]"
holds "stats: bytes uploaded" "[ '$(json exact upload_bytes)' -gt 0 ]"
holds "stats: the KDA layers' recurrences ran on the device" "[ '$(json exact kda_recurrences)' -gt 0 ]"
kda=$(sed -nE "s/.*gpu $lvp \\(.*\\): [0-9]+ matrix products, ([0-9]+) KDA recurrences.*/\\1/p" "$work/exact.err")
check "stats: KDA recurrences, as the summary line counts them" "${kda:-none}" "$(json exact kda_recurrences)"
holds "stats: the KDA layers' short convs ran on the device, three (q, k, v) a recurrence" \
  "[ '$(json exact kda_convs)' -gt 0 ] && [ '$(json exact kda_convs)' -eq $((3 * $(json exact kda_recurrences))) ]"
holds "stats: the device peak within the plan" "[ '$(json exact peak_bytes)' -gt 0 ] && [ '$(json exact peak_bytes)' -le '$need' ]"
holds "stats: products went in more slices than products" "[ '$(json exact dispatches)' -gt '$(json exact products)' ]"
holds "stats: uploads overlapped the device's work" "[ '$(json exact overlapped_upload_bytes)' -gt 0 ]"
holds "stats: the overlapped bytes are some of those uploaded" \
  "[ '$(json exact overlapped_upload_bytes)' -lt '$(json exact upload_bytes)' ]"
holds "stats: busy waits, at most one a slice" "[ '$(json exact busy_waits)' -le '$(json exact dispatches)' ]"
# The chunk's norms and SiTU steps ran on the device too, within the same peak.
holds "stats: norms ran on the device" "[ '$(json exact rms_norms)' -gt 0 ]"
holds "stats: SiTU steps ran on the device" "[ '$(json exact situ_steps)' -gt 0 ]"
holds "stats: AttnRes mixes ran on the device" "[ '$(json exact attn_res_mixes)' -gt 0 ]"
# The KDA layers' norms and gates around each recurrence: q's and k's L2
# norms, the gates, the output norm and gate, once each a recurrence.
holds "stats: the KDA L2 norms ran on the device, two (q, k) a recurrence" \
  "[ '$(json exact kda_norms)' -gt 0 ] && [ '$(json exact kda_norms)' -eq $((2 * $(json exact kda_recurrences))) ]"
check "stats: the KDA gates ran on the device, one a recurrence" "$(json exact kda_recurrences)" "$(json exact kda_gates)"
check "stats: the KDA output norms ran on the device, one a recurrence" "$(json exact kda_recurrences)" \
  "$(json exact kda_outputs)"
check "stats: every block state kept on the device, copied once" "$blocks" "$(json exact block_upload_bytes)"
# Each layer's trunk products keep their weights on the device across the
# chunk's two sub-batches (256 + 44 rows), and MLA's attention its kv_b:
# each matrix copied there once (weights and scales by the headers, but the
# routed experts' and the AttnRes keys), the second sub-batch finding all
# of it there.
check "stats: each layer's products' weights kept once" "$kept" "$(json exact weight_kept_bytes)"
check "stats: the second sub-batch reused them" "$kept" "$(json exact weight_reused_bytes)"
holds "stats: the weights are some of the bytes uploaded" \
  "[ '$(json exact weight_upload_bytes)' -gt '$kept' ] && [ '$(json exact weight_upload_bytes)' -lt '$(json exact upload_bytes)' ]"
# A byte less: the kept layer weights take what room is left (the largest
# layer keeps a matrix fewer), the block states all kept; the same ids.
run short --gpu "$lvp" --gpu-mb "$(mb $((need - 1)))" --stats-json "$work/short.json"
holds "a byte less than the plan: same ids" "cmp -s '$work/short.out' '$work/cpu.out'"
check "a byte less: the plan takes the room left" "$((need - 1))" "$(json short plan_bytes)"
check "a byte less: every block state kept still" "$blocks" "$(json short block_upload_bytes)"
holds "a byte less: fewer layer weights kept" "[ '$(json short weight_kept_bytes)' -lt '$kept' ]"
holds "a byte less: within the budget" "[ '$(json short peak_bytes)' -le $((need - 1)) ]"
# A layer's weights and a byte less: no weights kept, one block fewer, the
# last one copied by each mix instead; the same ids.
run shorter --gpu "$lvp" --gpu-mb "$(mb $((need - layer - 1)))" --stats-json "$work/shorter.json"
holds "a layer's weights and a byte less: same ids" "cmp -s '$work/shorter.out' '$work/cpu.out'"
check "a layer and a byte less: no weights kept" 0 "$(json shorter weight_kept_bytes)"
check "a layer and a byte less: one block fewer kept" "$((blocks - block_bytes))" "$(json shorter block_upload_bytes)"
bad "a byte less than the plan's products, k3-forward" 6 "--gpu-mb: the device's products need" -- \
  "$FWD" "$TINY" --ids "$work/ids.txt" --gen 2 --gpu "$lvp" --gpu-mb "$(mb $((rest - 1)))"
contains "the refusal says the bytes" "($rest bytes) for up to 300 rows and 1 x 302 cached positions" \
  "$(cat "$work/err")"
# Staging into device-local memory (K3_GPU_DEVICE_LOCAL_STAGING=1, as on a
# discrete GPU without host-visible device-local memory): the plan counts
# the slots' device-local copies.
bad "device-local staging: a byte less than its plan" 6 "--gpu-mb: the device's products need" -- \
  env K3_GPU_DEVICE_LOCAL_STAGING=1 "$FWD" "$TINY" --ids "$work/ids.txt" --gen 2 --gpu "$lvp" \
  --gpu-mb "$(mb $((rest_local - 1)))"
contains "device-local staging: the refusal says its bytes" "($rest_local bytes)" "$(cat "$work/err")"
# Its plan, run with exactly that budget: the same ids, every block state
# copied once into its device-local twin and each of the chunk's latent
# rows once into theirs (the 2 generated rows are decoded on the CPU).
K3_GPU_DEVICE_LOCAL_STAGING=1 run local --gpu "$lvp" --gpu-mb "$(mb "$need_local")" --stats-json "$work/local.json"
holds "device-local staging, a budget of exactly its plan: same ids" "cmp -s '$work/local.out' '$work/cpu.out'"
check "device-local staging: the plan's device bytes, by formula" "$need_local" "$(json local plan_bytes)"
check "device-local staging: every block state row copied into its twin once" "$blocks" \
  "$(json local block_twin_bytes)"
check "device-local staging: every latent row copied into its twin once" "$((300 * latent_row))" \
  "$(json local latent_twin_bytes)"
holds "device-local staging: the device peak within the plan" "[ '$(json local peak_bytes)' -le '$need_local' ]"
holds "device-local staging: no validation errors" "! grep -q 'vulkan validation' '$work/local.err'"
check "host-visible staging: no twins" "0 0" "$(json exact block_twin_bytes) $(json exact latent_twin_bytes)"
check "host-visible staging: stats say so" host_visible "$(json exact staging)"
check "host-visible staging: no device-local copies" 0 "$(json exact device_local_copies)"
bad "too small, k3-chat" 6 "--gpu-mb" -- "$BIN/k3-chat" "$TINY" --gpu "$lvp" --gpu-mb 0.001 < /dev/null
bad "too small, k3-serve (before it listens)" 6 "--gpu-mb" -- \
  "$BIN/k3-serve" "$TINY" --port 0 --gpu "$lvp" --gpu-mb 0.001
bad "--gpu-mb without --gpu" 2 "--gpu-mb is the device's budget: give --gpu too" -- \
  "$FWD" "$TINY" --ids "$work/ids.txt" --gpu-mb 100

# Out of device memory mid-prompt, continuing a saved conversation into
# itself: the file is left as it was, no --logits file appears.
"$FWD" "$TINY" --ids "$work/ids.txt" --state-out "$work/conv.state" > /dev/null 2>&1
check "the saved conversation: exit" 0 "$?"
cp "$work/conv.state" "$work/conv.before"
bad "out of device memory mid-prompt" 6 "out of device memory" -- env K3_GPU_OUT_OF_MEMORY_AFTER=5 \
  "$FWD" "$TINY" --ids "$work/more.txt" --state-in "$work/conv.state" --state-out "$work/conv.state" --gen 2 \
  --gpu "$lvp" --logits "$work/oom.logits" --quiet
holds "out of memory: the conversation unchanged" "cmp -s '$work/conv.state' '$work/conv.before'"
holds "out of memory: no logits file" "[ ! -e '$work/oom.logits' ]"
holds "out of memory: nothing else beside the state" "[ \"\$(ls '$work' | grep -c conv)\" = 2 ]"
finish k3_gpu_budget_test
