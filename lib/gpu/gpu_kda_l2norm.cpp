// GpuBackend's KDA q/k normalisation (shaders/kda_l2norm.comp): the rows go
// in the KDA recurrence's input buffer and come back normalised in place. A
// slice takes dim floats a row (q's or k's: H*D a token), no more of that
// buffer than the recurrence of the same tokens (4 H*D + H floats a token),
// so the device plan's bound for the KDA buffers holds.
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

// kda_l2norm.comp's push constants.
struct L2Shape {
  uint32_t dim, rows, scale_bits;
};
constexpr size_t kMaxGroups = 65535;  // Vulkan's least maxComputeWorkGroupCount

}  // namespace

bool GpuBackend::kda_l2_normalize(float* x, size_t rows, size_t dim, float scale) {
  // The shader's exact steps need float64 and int64.
  if (rows == 0 || dim == 0 || dim > UINT32_MAX || !device_->has_float64()) return false;
  const size_t row_bytes = dim * sizeof(float), limit = device_->max_binding_bytes();
  if (row_bytes > limit) return false;
  if (products_ >= fail_after_) vk_check(VK_ERROR_DEVICE_LOST, "running a KDA L2 norm (K3_GPU_FAIL_AFTER)");
  if (!kda_l2norm_) kda_l2norm_ = std::make_unique<ComputePipeline>(*device_, "kda_l2norm", 1, sizeof(L2Shape), 0);
  uint32_t scale_bits;
  std::memcpy(&scale_bits, &scale, sizeof scale_bits);
  const size_t slice = std::min({rows, limit / row_bytes, kMaxGroups});
  for (size_t r0 = 0; r0 < rows; r0 += slice) {
    const size_t rn = std::min(slice, rows - r0);
    grow(*kda_in_, rn * row_bytes);
    std::memcpy(kda_in_->data(), x + r0 * dim, rn * row_bytes);
    upload_bytes_ += rn * row_bytes;
    const L2Shape shape{static_cast<uint32_t>(dim), static_cast<uint32_t>(rn), scale_bits};
    kda_l2norm_->run({kda_in_.get()}, &shape, static_cast<uint32_t>(rn), 1);
    std::memcpy(x + r0 * dim, kda_in_->data(), rn * row_bytes);
  }
  ++kda_norms_;
  return true;
}

}  // namespace k3
