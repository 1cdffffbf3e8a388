// One command buffer and its fence: a unit of work submitted to the
// device's queue and waited for later, so the host can fill the next
// staging buffer while the device runs this one (GpuBackend keeps two).
#pragma once

#include <vulkan/vulkan.h>

#include <functional>

namespace k3 {

class VulkanDevice;

class CommandSlot {
 public:
  explicit CommandSlot(VulkanDevice& device);
  ~CommandSlot();  // waits for what it submitted
  CommandSlot(const CommandSlot&) = delete;
  CommandSlot& operator=(const CommandSlot&) = delete;

  // Records commands with `record` and submits them without waiting. The
  // slot must not be pending (wait() first).
  void submit(const std::function<void(VkCommandBuffer)>& record);
  // Submitted and not yet waited for.
  bool pending() const { return pending_; }
  // Waits for the submitted work (returns at once when none is pending);
  // true when it was still running, so the caller had to wait.
  bool wait();

 private:
  VulkanDevice& device_;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  bool pending_ = false;
};

}  // namespace k3
