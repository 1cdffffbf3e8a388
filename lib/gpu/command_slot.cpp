#include "gpu/command_slot.h"

#include <string>

#include "gpu/vulkan_context.h"

namespace k3 {

CommandSlot::CommandSlot(VulkanDevice& device) : device_(device) {
  VkCommandBufferAllocateInfo alloc{};
  alloc.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  alloc.commandPool = device_.command_pool();
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  vk_check(vkAllocateCommandBuffers(device_.handle(), &alloc, &commands_), "allocating a command buffer");
  VkFenceCreateInfo fence{};
  fence.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  vk_check(vkCreateFence(device_.handle(), &fence, nullptr, &fence_), "creating a fence");
}

CommandSlot::~CommandSlot() {
  // Nothing may be destroyed while the device still runs it; an error here
  // has already been reported by the call that failed.
  if (pending_) vkWaitForFences(device_.handle(), 1, &fence_, VK_TRUE, UINT64_MAX);
  if (fence_) vkDestroyFence(device_.handle(), fence_, nullptr);
  if (commands_) vkFreeCommandBuffers(device_.handle(), device_.command_pool(), 1, &commands_);
}

void CommandSlot::submit(const std::function<void(VkCommandBuffer)>& record) {
  record_and_submit(device_.handle(), device_.queue(), device_.index(), commands_, fence_, record);
  pending_ = true;
}

bool CommandSlot::wait() {
  if (!pending_) return false;
  pending_ = false;
  const VkResult status = vkGetFenceStatus(device_.handle(), fence_);
  if (status == VK_SUCCESS) return false;
  if (status != VK_NOT_READY) vk_check(status, "waiting for gpu " + std::to_string(device_.index()));
  vk_check(vkWaitForFences(device_.handle(), 1, &fence_, VK_TRUE, UINT64_MAX),
           "waiting for gpu " + std::to_string(device_.index()));
  return true;
}

}  // namespace k3
