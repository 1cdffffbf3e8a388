// GpuBackend::attn_res_mix: kernels::attn_res_mix on the device
// (shaders/attn_res_mix.comp), one workgroup per row, in the product buffers:
//   x_  the norm's weight (FP32), the projection row (BF16 pairs), then the
//       values [block states..., p] of every row (what the chunk's sub-batch
//       stages: runtime/device_plan counts it), less the block states kept
//       on the device (gpu_chunk_blocks.cpp), which the shader reads there
//       (in their device-local twin where there is one)
//   y_  the mixed rows [n, hidden], then each row's scores [n, values]
#include <algorithm>
#include <cstring>
#include <memory>

#include "gpu/compute_pipeline.h"
#include "gpu/gpu.h"
#include "gpu/gpu_backend.h"
#include "gpu/vulkan_buffer.h"
#include "gpu/vulkan_context.h"

namespace k3 {
namespace {

// attn_res_mix.comp's push constants (word offsets).
struct MixShape {
  uint32_t hidden, n, values, eps_bits, values_at, row0, kept, kept_rows, kept_row0;
};
constexpr size_t kMaxGroups = 65535;  // maxComputeWorkGroupCount's guaranteed minimum

}  // namespace

bool GpuBackend::attn_res_mix(const float* const* blocks, size_t block_count, const float* p, size_t n, size_t hidden,
                              const uint16_t* proj, const float* norm, float eps, float* out) {
  return mix_values(0, blocks, block_count, 0, p, n, hidden, proj, norm, eps, out);
}

bool GpuBackend::mix_values(size_t kept, const float* const* blocks, size_t block_count, size_t row0, const float* p,
                            size_t n, size_t hidden, const uint16_t* proj, const float* norm, float eps, float* out) {
  // The shader's exact steps need float64 and int64; without them the
  // CPU mixes.
  if (n == 0 || hidden == 0 || !device_->has_float64()) return false;
  const size_t values = block_count + 1;
  // Only the values not kept on the device go in x_; every value's score
  // goes in y_.
  const size_t in_words = gpu_attn_res_words(values - kept, hidden, n).in;
  const size_t out_words = gpu_attn_res_words(values, hidden, n).out;
  // Offsets are 32-bit words in the shader; what a binding cannot hold stays
  // on the CPU (the same bits).
  const size_t limit = std::min<size_t>(device_->max_binding_bytes() - 16, size_t{UINT32_MAX});
  if (in_words * 4 > limit || out_words * 4 > limit) return false;
  if (!attn_res_) attn_res_ = std::make_unique<ComputePipeline>(*device_, "attn_res_mix", 3, sizeof(MixShape), 0);

  grow(*x_, in_words * 4);
  grow(*y_, out_words * 4);
  uint32_t* x = static_cast<uint32_t*>(x_->data());
  std::memcpy(x, norm, hidden * 4);
  if (hidden % 2 != 0) x[hidden + hidden / 2] = 0;  // an odd width's last pair, half filled
  std::memcpy(x + hidden, proj, hidden * 2);
  const size_t values_at = in_words - (values - kept) * n * hidden, value_words = n * hidden;
  for (size_t j = kept; j < values; ++j)
    std::memcpy(x + values_at + (j - kept) * value_words, j < block_count ? blocks[j] : p, value_words * 4);
  upload_bytes_ += in_words * 4;

  MixShape shape{static_cast<uint32_t>(hidden),    static_cast<uint32_t>(n),
                 static_cast<uint32_t>(values),    0,
                 static_cast<uint32_t>(values_at), 0,
                 static_cast<uint32_t>(kept),      static_cast<uint32_t>(chunk_block_rows_),
                 static_cast<uint32_t>(row0)};
  std::memcpy(&shape.eps_bits, &eps, sizeof eps);
  // Without kept values the shader never reads binding 2: x_ stands in.
  // With device-local twins, the kept blocks are in chunk_blocks_twin_.
  const VulkanBuffer* kept_blocks = kept == 0 ? x_.get() : twins() ? chunk_blocks_twin_.get() : chunk_blocks_.get();
  for (size_t r0 = 0; r0 < n; r0 += kMaxGroups) {
    shape.row0 = static_cast<uint32_t>(r0);
    attn_res_->run({x_.get(), y_.get(), kept_blocks}, &shape, static_cast<uint32_t>(std::min(kMaxGroups, n - r0)), 1);
  }
  std::memcpy(out, y_->data(), value_words * 4);
  ++attn_res_mixes_;
  return true;
}

}  // namespace k3
