// GpuBackend's KDA output norm and gate (shaders/kda_output.comp): o and the
// gate's raw values go in the KDA recurrence's input buffer, the result
// comes back over o (in place), o_norm where a product's weights go. A row
// slice takes 2 * dim floats a row, no more of that buffer than the
// recurrence of the same tokens (4 H*D + H floats a token), so the device
// plan's bound for the KDA buffers holds.
#include <algorithm>
#include <cstring>
#include <memory>

#include "common/error.h"
#include "gpu/compute_pipeline.h"
#include "gpu/gpu_backend.h"
#include "gpu/vulkan_buffer.h"
#include "gpu/vulkan_context.h"

namespace k3 {
namespace {

// kda_output.comp's push constants.
struct OutputShape {
  uint32_t dim, rows, eps_bits;
};
constexpr size_t kMaxGroups = 65535;  // Vulkan's least maxComputeWorkGroupCount

}  // namespace

bool GpuBackend::kda_output(float* o, const float* gate, size_t rows, size_t dim, const float* o_norm, float eps) {
  // The shader's exact steps need float64 and int64.
  if (rows == 0 || dim == 0 || dim > UINT32_MAX || !device_->has_float64()) return false;
  const size_t row_bytes = dim * sizeof(float), limit = device_->max_binding_bytes();
  if (2 * row_bytes > limit) return false;
  if (products_ >= fail_after_) vk_check(VK_ERROR_DEVICE_LOST, "running a KDA output norm (K3_GPU_FAIL_AFTER)");
  if (!kda_output_) kda_output_ = std::make_unique<ComputePipeline>(*device_, "kda_output", 2, sizeof(OutputShape), 0);
  grow(*stages_[0].weights, row_bytes);
  std::memcpy(stages_[0].weights->data(), o_norm, row_bytes);
  upload_bytes_ += row_bytes;
  uint32_t eps_bits;
  std::memcpy(&eps_bits, &eps, sizeof eps_bits);
  const size_t slice = std::min({rows, limit / (2 * row_bytes), kMaxGroups});
  for (size_t r0 = 0; r0 < rows; r0 += slice) {
    const size_t rn = std::min(slice, rows - r0);
    grow(*kda_in_, 2 * rn * row_bytes);
    float* in = static_cast<float*>(kda_in_->data());
    std::memcpy(in, o + r0 * dim, rn * row_bytes);
    std::memcpy(in + rn * dim, gate + r0 * dim, rn * row_bytes);
    upload_bytes_ += 2 * rn * row_bytes;
    const OutputShape shape{static_cast<uint32_t>(dim), static_cast<uint32_t>(rn), eps_bits};
    kda_output_->run({kda_in_.get(), stages_[0].weights.get()}, &shape, static_cast<uint32_t>(rn), 1);
    std::memcpy(o + r0 * dim, in, rn * row_bytes);
  }
  ++kda_outputs_;
  return true;
}

}  // namespace k3
