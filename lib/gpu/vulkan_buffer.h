// A storage buffer in host-visible, coherent memory, mapped for its
// lifetime: the host writes inputs and reads outputs in place (on
// integrated GPUs and lavapipe, host-visible memory is the device's
// memory); it may be the source or the target of a copy on the device. Or
// one in device-local memory, not mapped, filled by such a copy or copied
// back to a mapped one (the staging of a discrete GPU:
// VulkanDevice::stages_into_device_local).
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>

namespace k3 {

class VulkanDevice;

class VulkanBuffer {
 public:
  enum class Memory { kHostMapped, kDeviceLocal };
  explicit VulkanBuffer(VulkanDevice& device, Memory memory = Memory::kHostMapped) : device_(device), kind_(memory) {}
  ~VulkanBuffer();
  VulkanBuffer(const VulkanBuffer&) = delete;
  VulkanBuffer& operator=(const VulkanBuffer&) = delete;

  // Makes the buffer hold at least `bytes` (grown, never shrunk; the old
  // contents are not kept). Throws Error(kResource) when the device refuses.
  void reserve(size_t bytes);
  void* data() const { return mapped_; }  // null in device-local memory
  VkBuffer handle() const { return buffer_; }
  size_t size() const { return size_; }

 private:
  void release();
  VulkanDevice& device_;
  Memory kind_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  void* mapped_ = nullptr;
  size_t size_ = 0;
};

// A barrier over all of `buffer`: its accesses `src` before it, `dst` after.
VkBufferMemoryBarrier whole_buffer_barrier(const VulkanBuffer& buffer, VkAccessFlags src, VkAccessFlags dst);

}  // namespace k3
