#include "gpu/vulkan_buffer.h"

#include <algorithm>

#include "gpu/vulkan_context.h"

namespace k3 {

VulkanBuffer::~VulkanBuffer() { release(); }

void VulkanBuffer::release() {
  VkDevice d = device_.handle();
  if (mapped_) vkUnmapMemory(d, memory_);
  if (buffer_) vkDestroyBuffer(d, buffer_, nullptr);
  if (memory_) vkFreeMemory(d, memory_, nullptr);
  mapped_ = nullptr;
  buffer_ = VK_NULL_HANDLE;
  memory_ = VK_NULL_HANDLE;
  size_ = 0;
}

void VulkanBuffer::reserve(size_t bytes) {
  bytes = std::max<size_t>(bytes, 16);
  if (bytes <= size_) return;
  release();
  VkDevice d = device_.handle();
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = bytes;
  const bool local = kind_ == Memory::kDeviceLocal;
  // Either kind may be a copy's source or target (staged weights and
  // activations in, products out).
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  vk_check(vkCreateBuffer(d, &info, nullptr, &buffer_), "creating a buffer of " + std::to_string(bytes) + " bytes");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(d, buffer_, &req);
  VkMemoryAllocateInfo alloc{};
  alloc.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex =
      local ? device_.device_memory_type(req.memoryTypeBits) : device_.host_memory_type(req.memoryTypeBits);
  vk_check(vkAllocateMemory(d, &alloc, nullptr, &memory_), "allocating " + std::to_string(bytes) + " bytes");
  vk_check(vkBindBufferMemory(d, buffer_, memory_, 0), "binding buffer memory");
  if (!local) vk_check(vkMapMemory(d, memory_, 0, VK_WHOLE_SIZE, 0, &mapped_), "mapping buffer memory");
  size_ = bytes;
}

VkBufferMemoryBarrier whole_buffer_barrier(const VulkanBuffer& buffer, VkAccessFlags src, VkAccessFlags dst) {
  VkBufferMemoryBarrier b{};
  b.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER;
  b.srcAccessMask = src;
  b.dstAccessMask = dst;
  b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  b.buffer = buffer.handle();
  b.offset = 0;
  b.size = VK_WHOLE_SIZE;
  return b;
}

}  // namespace k3
