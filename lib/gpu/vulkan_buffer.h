// A storage buffer in host-visible, coherent memory, mapped for its
// lifetime: the host writes inputs and reads outputs in place. (Device-local
// memory with staging is the next step for discrete GPUs; on integrated
// GPUs and lavapipe, host-visible memory is the device's memory.)
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>

namespace k3 {

class VulkanDevice;

class VulkanBuffer {
 public:
  explicit VulkanBuffer(VulkanDevice& device) : device_(device) {}
  ~VulkanBuffer();
  VulkanBuffer(const VulkanBuffer&) = delete;
  VulkanBuffer& operator=(const VulkanBuffer&) = delete;

  // Makes the buffer hold at least `bytes` (grown, never shrunk; the old
  // contents are not kept). Throws Error(kResource) when the device refuses.
  void reserve(size_t bytes);
  void* data() const { return mapped_; }
  VkBuffer handle() const { return buffer_; }
  size_t size() const { return size_; }

 private:
  void release();
  VulkanDevice& device_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  void* mapped_ = nullptr;
  size_t size_ = 0;
};

}  // namespace k3
