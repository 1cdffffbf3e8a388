// GpuBackend's device-local twins (gpu_backend.h): on a discrete GPU whose
// memory the host cannot map, a shader reading a host-visible buffer reads
// it across the bus on every dispatch. The chunk's kept block states are
// read by both mixes of every layer (at K3's geometry ~59 MB a 256-row
// piece a mix, ~350 GB over an 8,192-token prompt) and the latent caches by
// every attention call; in device-local twins they cross the bus once. The
// twins hold the same words at the same offsets, so the shaders' bits do
// not change.
#include <vector>

#include "gpu/gpu_backend.h"
#include "gpu/vulkan_buffer.h"
#include "gpu/vulkan_context.h"

namespace k3 {

bool GpuBackend::twins() const { return device_->stages_into_device_local(); }

void GpuBackend::record_twin_copy(VkCommandBuffer commands, const VulkanBuffer& from, const VulkanBuffer& twin,
                                  const std::vector<VkBufferCopy>& regions) const {
  if (regions.empty()) return;
  vkCmdCopyBuffer(commands, from.handle(), twin.handle(), static_cast<uint32_t>(regions.size()), regions.data());
  // The copies complete before a shader of this command buffer, or of one
  // submitted after it, reads the twin.
  const VkBufferMemoryBarrier b = whole_buffer_barrier(twin, VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_SHADER_READ_BIT);
  vkCmdPipelineBarrier(commands, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 0, nullptr, 1,
                       &b, 0, nullptr);
}

}  // namespace k3
