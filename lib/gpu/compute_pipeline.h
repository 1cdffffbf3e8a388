// One compute shader ready to dispatch: its SPIR-V (embedded at build time,
// spirv_shaders.h), storage buffers at bindings 0..N-1, a push-constant
// block and one specialization constant (constant_id 0). `sets` descriptor
// sets, one per dispatch that may be in flight at once (GpuBackend's two
// staging slots).
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace k3 {

class VulkanBuffer;
class VulkanDevice;

class ComputePipeline {
 public:
  ComputePipeline(VulkanDevice& device, const char* shader, uint32_t bindings, uint32_t push_bytes,
                  uint32_t specialization, uint32_t sets = 1);
  ~ComputePipeline();
  ComputePipeline(const ComputePipeline&) = delete;
  ComputePipeline& operator=(const ComputePipeline&) = delete;

  // Binds `buffers` (one per binding, in order), pushes `push`, dispatches
  // groups_x x groups_y workgroups and waits for them.
  void run(const std::vector<const VulkanBuffer*>& buffers, const void* push, uint32_t groups_x, uint32_t groups_y);
  // Points descriptor set `set` at `buffers` and records the dispatch into
  // `commands`, to be submitted by the caller; the set must not be in use
  // by a dispatch still running.
  void record(VkCommandBuffer commands, uint32_t set, const std::vector<const VulkanBuffer*>& buffers, const void* push,
              uint32_t groups_x, uint32_t groups_y);

 private:
  VulkanDevice& device_;
  uint32_t bindings_, push_bytes_;
  VkShaderModule module_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  std::vector<VkDescriptorSet> sets_;
};

}  // namespace k3
