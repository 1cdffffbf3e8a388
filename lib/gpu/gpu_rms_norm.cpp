// kernels::rms_norm on the device (shaders/rms_norm.comp): one workgroup per
// row, every rounding of the CPU kernel emulated exactly. The rows go in the
// product buffers (activations in, outputs out, the norm's weight where a
// product's weights go), so the device holds no more than its largest
// product did (runtime/device_plan's bound). Where the device stages into
// device-local memory, the shader reads and writes the products'
// device-local twins of those buffers (local_x_, the first slot's
// local_weights, local_y_), which its command buffer copies in and out.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "gpu/compute_pipeline.h"
#include "gpu/gpu_backend.h"
#include "gpu/vulkan_buffer.h"
#include "gpu/vulkan_context.h"

namespace k3 {
namespace {

// rms_norm.comp's push constants.
struct NormShape {
  uint32_t dim, n, eps_bits;
};
// Workgroups in one dispatch's x (Vulkan's least maxComputeWorkGroupCount).
constexpr size_t kMaxGroups = 65535;

}  // namespace

bool GpuBackend::rms_norm(const float* x, size_t n, size_t dim, const float* weight, float eps, float* out) {
  // The shader needs float64 and int64 for its exact steps; a device
  // without them leaves the norm to the CPU.
  if (n == 0 || dim == 0 || dim > UINT32_MAX || !device_->has_float64()) return false;
  const size_t row_bytes = dim * sizeof(float);
  const size_t limit = device_->max_binding_bytes() - 16;
  if (row_bytes > limit) return false;
  if (!rms_norm_) rms_norm_ = std::make_unique<ComputePipeline>(*device_, "rms_norm", 3, sizeof(NormShape), 0);
  const bool local = twins();
  grow(*stages_[0].weights, row_bytes);
  if (local) grow(*stages_[0].local_weights, row_bytes);
  std::memcpy(stages_[0].weights->data(), weight, row_bytes);
  upload_bytes_ += row_bytes;
  const size_t slice = std::min({n, limit / row_bytes, kMaxGroups});
  uint32_t eps_bits;
  std::memcpy(&eps_bits, &eps, sizeof eps_bits);
  for (size_t t0 = 0; t0 < n; t0 += slice) {
    const size_t tn = std::min(slice, n - t0);
    grow(*x_, tn * row_bytes);
    grow(*y_, tn * row_bytes);
    if (local) {
      grow(*local_x_, tn * row_bytes);
      grow(*local_y_, tn * row_bytes);
    }
    std::memcpy(x_->data(), x + t0 * dim, tn * row_bytes);
    upload_bytes_ += tn * row_bytes;
    const NormShape shape{static_cast<uint32_t>(dim), static_cast<uint32_t>(tn), eps_bits};
    const std::vector<const VulkanBuffer*> buffers =
        local ? std::vector<const VulkanBuffer*>{local_x_.get(), stages_[0].local_weights.get(), local_y_.get()}
              : std::vector<const VulkanBuffer*>{x_.get(), stages_[0].weights.get(), y_.get()};
    device_->submit_and_wait([&](VkCommandBuffer commands) {
      if (local && t0 == 0)
        record_activation_copy(commands, *stages_[0].weights, *stages_[0].local_weights, row_bytes, true);
      if (local) record_activation_copy(commands, *x_, *local_x_, tn * row_bytes, true);
      rms_norm_->record(commands, 0, buffers, &shape, static_cast<uint32_t>(tn), 1);
      if (local) record_activation_copy(commands, *local_y_, *y_, tn * row_bytes, false);
    });
    if (local) row_twin_bytes_ += (t0 == 0 ? row_bytes : 0) + 2 * tn * row_bytes;
    std::memcpy(out + t0 * dim, y_->data(), tn * row_bytes);
  }
  ++rms_norms_;
  return true;
}

}  // namespace k3
