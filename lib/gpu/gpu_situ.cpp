// The SiTU step (kernels::situ_span) on the device (shaders/situ.comp):
// one invocation per element, Highway's Exp and Tanh evaluated step by step
// with every rounding emulated. The gate values go in the activations'
// buffer and come back in place, the up values in the outputs' buffer: a
// product of the same MLP held both (its gate output and its down product's
// input), so the device's peak stays within runtime/device_plan's bound.
// Where the device stages into device-local memory, the shader reads and
// writes the products' device-local twins of those buffers (local_x_,
// local_y_), which its command buffer copies in (g and u) and out (g).
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "gpu/compute_pipeline.h"
#include "gpu/gpu_backend.h"
#include "gpu/vulkan_buffer.h"
#include "gpu/vulkan_context.h"
#include "kernels/situ.h"

namespace k3 {
namespace {

// situ.comp's push constants.
struct SituShape {
  uint32_t count, beta_bits, linear_beta_bits, has_linear_beta, row_width;
};
constexpr uint32_t kGroupSize = 64;    // local_size_x
constexpr uint32_t kRowGroups = 1024;  // workgroups per dispatch row
constexpr size_t kRowWidth = kGroupSize * kRowGroups;

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

}  // namespace

bool GpuBackend::situ(float* g, const float* u, size_t count, const kernels::SituParams& p) {
  // The shader needs float64 and int64; without them the CPU runs the step.
  if (count == 0 || !device_->has_float64()) return false;
  if (!situ_) situ_ = std::make_unique<ComputePipeline>(*device_, "situ", 2, sizeof(SituShape), 0);
  const size_t limit = (device_->max_binding_bytes() - 16) / sizeof(float);
  const size_t slice = std::min<size_t>({count, limit, size_t{UINT32_MAX} / 2});
  const bool local = twins();
  for (size_t i0 = 0; i0 < count; i0 += slice) {
    const size_t m = std::min(slice, count - i0);
    grow(*x_, m * sizeof(float));
    grow(*y_, m * sizeof(float));
    if (local) {
      grow(*local_x_, m * sizeof(float));
      grow(*local_y_, m * sizeof(float));
    }
    std::memcpy(x_->data(), g + i0, m * sizeof(float));
    std::memcpy(y_->data(), u + i0, m * sizeof(float));
    upload_bytes_ += 2 * m * sizeof(float);
    const SituShape shape{static_cast<uint32_t>(m), bits_of(p.beta), bits_of(p.linear_beta),
                          p.has_linear_beta ? 1u : 0u, static_cast<uint32_t>(kRowWidth)};
    const uint32_t rows = static_cast<uint32_t>((m + kRowWidth - 1) / kRowWidth);
    const uint32_t groups_x = rows > 1 ? kRowGroups : static_cast<uint32_t>((m + kGroupSize - 1) / kGroupSize);
    const std::vector<const VulkanBuffer*> buffers =
        local ? std::vector<const VulkanBuffer*>{local_x_.get(), local_y_.get()}
              : std::vector<const VulkanBuffer*>{x_.get(), y_.get()};
    device_->submit_and_wait([&](VkCommandBuffer commands) {
      if (local) {
        record_activation_copy(commands, *x_, *local_x_, m * sizeof(float), true);
        record_activation_copy(commands, *y_, *local_y_, m * sizeof(float), true);
      }
      situ_->record(commands, 0, buffers, &shape, groups_x, rows);
      if (local) record_activation_copy(commands, *local_x_, *x_, m * sizeof(float), false);
    });
    if (local) row_twin_bytes_ += 3 * m * sizeof(float);
    std::memcpy(g + i0, x_->data(), m * sizeof(float));
  }
  ++situ_steps_;
  return true;
}

}  // namespace k3
