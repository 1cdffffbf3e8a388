#include "runtime/device_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>

#include "common/byte_format.h"
#include "common/error.h"
#include "common/setting_spelling.h"
#include "common/tool_main.h"
#include "gpu/gpu.h"
#include "model/forward_scratch.h"

namespace k3 {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The largest product's weights, scales, input and output widths, each the
// maximum over the checkpoint's matrices (compressed-tensors MXFP4: packed
// [out, in/2] U8 beside a weight_scale [out, in/32]).
GpuProductBound largest_product(const Checkpoint& checkpoint) {
  GpuProductBound b;
  for (const auto& [name, where] : checkpoint.tensors()) {
    const TensorInfo& t = *where.info;
    if (t.shape.size() != 2) continue;
    if (t.dtype == DType::kBF16 && !ends_with(name, "embed_tokens.weight")) {
      b.weight_bytes = std::max(b.weight_bytes, t.nbytes);
      b.rows = std::max(b.rows, t.shape[0]);
      b.cols = std::max(b.cols, t.shape[1]);
    } else if (t.dtype == DType::kU8 && ends_with(name, ".weight_packed")) {
      b.weight_bytes = std::max(b.weight_bytes, t.nbytes);
      b.rows = std::max(b.rows, t.shape[0]);
      b.cols = std::max(b.cols, t.shape[1] * 2);
    } else if (t.dtype == DType::kU8 && ends_with(name, ".weight_scale")) {
      b.scale_bytes = std::max(b.scale_bytes, t.nbytes);
    }
  }
  return b;
}

// The KDA layers' heads (b_proj [H, hidden]) and heads x dim (dt_bias
// [H*D]), from any KDA layer (all have K3's one geometry); zeros without.
struct KdaHeads {
  uint64_t heads = 0, head_dim = 0;
};
KdaHeads kda_heads(const Checkpoint& checkpoint) {
  uint64_t heads = 0, width = 0;
  for (const auto& [name, where] : checkpoint.tensors()) {
    const TensorInfo& t = *where.info;
    if (ends_with(name, "self_attn.b_proj.weight") && t.shape.size() == 2) heads = std::max(heads, t.shape[0]);
    if (ends_with(name, "self_attn.dt_bias") && t.shape.size() == 1) width = std::max(width, t.shape[0]);
  }
  if (heads == 0 || width % heads != 0) return {};
  return {heads, width / heads};
}

}  // namespace

uint64_t layer_weight_device_bytes(const Checkpoint& checkpoint, uint64_t stage_bytes) {
  std::map<uint64_t, uint64_t> layers;
  const std::string prefix = "model.layers.";
  for (const auto& [name, where] : checkpoint.tensors()) {
    const TensorInfo& t = *where.info;
    const size_t at = name.find(prefix);
    // Not the routed experts (never kept) nor the AttnRes keys (copied per
    // mix, with its values).
    if (t.shape.size() != 2 || t.shape[0] == 0 || at == std::string::npos ||
        name.find(".experts.") != std::string::npos || ends_with(name, "_res_proj.weight"))
      continue;
    const uint64_t layer = std::strtoull(name.c_str() + at + prefix.size(), nullptr, 10);
    // MLA's kv_b, read whole by its attention: one buffer, with the word
    // the shader may read past it.
    if (ends_with(name, "kv_b_proj.weight")) {
      layers[layer] += std::max<uint64_t>(16, t.nbytes + 4);
      continue;
    }
    // The bytes of a row of the product's weights, which set its slices'
    // rows (an MXFP4 row's scales are 1/16 of its packed bytes).
    uint64_t slice_row_bytes = 0;
    if (t.dtype == DType::kBF16 && ends_with(name, ".weight")) slice_row_bytes = t.nbytes / t.shape[0];
    else if (t.dtype == DType::kU8 && ends_with(name, ".weight_packed")) slice_row_bytes = t.shape[1];
    else if (t.dtype == DType::kU8 && ends_with(name, ".weight_scale")) slice_row_bytes = t.shape[1] * 16;
    else continue;
    // Kept as the stage holds it: a buffer (of at least 16 bytes) a row
    // slice, with the word the shader may read past it.
    const uint64_t rows = t.shape[0], row_bytes = t.nbytes / rows;
    const uint64_t slice_rows =
        std::min(rows, std::max<uint64_t>(1, stage_bytes / std::max<uint64_t>(1, slice_row_bytes)));
    uint64_t bytes = 0;
    for (uint64_t r0 = 0; r0 < rows; r0 += slice_rows)
      bytes += std::max<uint64_t>(16, std::min(slice_rows, rows - r0) * row_bytes + 4);
    layers[layer] += bytes;
  }
  uint64_t largest = 0;
  for (const auto& [layer, bytes] : layers) largest = std::max(largest, bytes);
  return largest;
}

MlaLatentShape mla_latent_shape(const Checkpoint& checkpoint) {
  MlaLatentShape shape;
  for (const auto& [name, where] : checkpoint.tensors()) {
    const TensorInfo& t = *where.info;
    if (!ends_with(name, "self_attn.kv_a_proj_with_mqa.weight") || t.shape.size() != 2) continue;
    ++shape.layers;
    shape.stride = std::max<uint64_t>(shape.stride, t.shape[0]);
  }
  return shape;
}

DeviceMixRows device_mix_rows(const ModelConfig& config, uint64_t rows, uint64_t chunk_rows) {
  return {residual_block_count(config) + 1, static_cast<uint64_t>(config.hidden_size), rows, chunk_rows};
}

uint64_t device_plan_bytes(const Checkpoint& checkpoint, uint64_t rows, const DeviceMixRows& mix, uint64_t sequences,
                           uint64_t context, bool device_local_staging) {
  const KdaHeads kda = kda_heads(checkpoint);
  const MlaLatentShape mla = mla_latent_shape(checkpoint);
  const GpuProductBound largest = largest_product(checkpoint);
  return gpu_matmul_device_bytes(largest, rows, gpu_stage_bytes(), device_local_staging) +
         gpu_kda_device_bytes(kda.heads, kda.head_dim, rows, sequences) +
         gpu_attn_res_device_bytes(largest, rows, mix.values, mix.hidden, mix.rows) +
         gpu_latent_cache_device_bytes(sequences * mla.layers, context, mla.stride, device_local_staging);
}

void check_device_request(const RunRequest& request) {
  if (request.gpu_device < 0 && request.gpu_mb > 0)
    throw Error(ExitCode::kUsage,
                spelled(kGpuMbSetting) + " is the device's budget: give " + spelled(kGpuSetting) + " too, or drop it");
}

DevicePlan check_device_plan(const Checkpoint& checkpoint, const RunRequest& request, uint64_t rows,
                             const DeviceMixRows& mix, uint64_t context, bool device_local_staging, std::ostream& log) {
  if (request.gpu_device < 0) return {};
  const uint64_t sequences = std::max<uint64_t>(1, request.sequences);
  const uint64_t need = device_plan_bytes(checkpoint, rows, mix, sequences, context, device_local_staging);
  const uint64_t budget = static_cast<uint64_t>(std::llround(request.gpu_mb * 1e6));
  if (budget > 0 && need > budget)
    throw Error(ExitCode::kResource, spelled(kGpuMbSetting) + ": the device's products need " + format_bytes(need) +
                                         " (" + std::to_string(need) + " bytes) for up to " + std::to_string(rows) +
                                         " rows and " + std::to_string(sequences) + " x " + std::to_string(context) +
                                         " cached positions, more than the " + format_bytes(budget) +
                                         " given; raise it");
  // The chunk's block states, kept as far as the budget leaves room.
  const uint64_t all_blocks =
      mix.values > 0 ? gpu_chunk_block_device_bytes(mix.values - 1, mix.hidden, mix.chunk_rows, device_local_staging)
                     : 0;
  const uint64_t blocks = budget > 0 ? std::min(all_blocks, budget - need) : all_blocks;
  // A layer's trunk weights kept across the chunk's sub-batches, in what is left.
  const uint64_t all_layer = layer_weight_device_bytes(checkpoint, gpu_stage_bytes());
  const uint64_t layer = budget > 0 ? std::min(all_layer, budget - need - blocks) : all_layer;
  // Said only once it fits, so a refusal stays one line.
  log << tool_name() << ": device " << request.gpu_device << ": " << format_bytes(need + blocks + layer)
      << " of device memory for the products of up to " << rows << " rows, the latent caches of " << sequences << " x "
      << context << " positions, " << format_bytes(blocks) << " of the chunk's block states and " << format_bytes(layer)
      << " of a layer's kept weights"
      << (budget > 0 ? " (" + spelled(kGpuMbSetting) + " " + format_bytes(budget) + ")" : std::string()) << "\n";
  return {need + blocks + layer, blocks, layer};
}

}  // namespace k3
