// A Vulkan instance and one device opened for compute: the loader, the
// validation layer when K3_GPU_VALIDATION=1 (the tests), the compute queue,
// and submitting one command buffer and waiting for it.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace k3 {

class VulkanInstance {
 public:
  // The process's one instance, made on first use and never destroyed:
  // Mesa's lavapipe keeps memory past vkDestroyInstance in a driver the
  // loader then unloads, which LeakSanitizer reports as k3's leak. Throws
  // Error(kResource) when the loader cannot make one, and when validation
  // is asked for but the layer is not installed (a later call tries again).
  static std::shared_ptr<VulkanInstance> shared();
  ~VulkanInstance();
  VulkanInstance(const VulkanInstance&) = delete;
  VulkanInstance& operator=(const VulkanInstance&) = delete;

  VkInstance handle() const { return instance_; }
  std::vector<VkPhysicalDevice> physical_devices() const;

  // Errors the validation layer reported in this process (0 without it).
  static size_t validation_errors();
  static bool validation_enabled();

 private:
  VulkanInstance() = default;
  static std::shared_ptr<VulkanInstance> create();
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
};

class VulkanDevice {
 public:
  VulkanDevice(std::shared_ptr<VulkanInstance> instance, VkPhysicalDevice physical, int index);
  ~VulkanDevice();
  VulkanDevice(const VulkanDevice&) = delete;
  VulkanDevice& operator=(const VulkanDevice&) = delete;

  VkDevice handle() const { return device_; }
  VkPhysicalDevice physical() const { return physical_; }
  const VkPhysicalDeviceProperties& properties() const { return properties_; }
  int index() const { return index_; }
  std::string name() const { return properties_.deviceName; }
  // shaderFloat64 and shaderInt64, what the exact emulation needs.
  bool has_float64() const { return float64_ && int64_; }
  bool has_shader_float64() const { return float64_; }
  bool has_shader_int64() const { return int64_; }
  // shaderDenormPreserveFloat32 (VK_KHR_shader_float_controls, enabled where
  // offered): the device can keep FP32 subnormals in a shader that declares
  // DenormPreserve (gpu/spirv_denorm_preserve.h).
  bool denorm_preserve32() const { return denorm_preserve32_; }
  // Largest storage buffer binding (bytes).
  uint64_t max_binding_bytes() const { return properties_.limits.maxStorageBufferRange; }
  // A host-visible, host-coherent memory type among `bits`, device-local
  // too where the device offers one (integrated GPUs, lavapipe, a discrete
  // GPU's resizable BAR): the shaders then read what the host wrote in
  // place. Throws if none.
  uint32_t host_memory_type(uint32_t bits) const;
  // A device-local memory type among `bits` (else any of them).
  uint32_t device_memory_type(uint32_t bits) const;
  // Whether staged weights are copied on the device into device-local
  // memory before a dispatch reads them: where no memory type is both
  // device-local and host-visible (a discrete GPU without resizable BAR:
  // host-visible memory is read over the bus there), or where
  // K3_GPU_DEVICE_LOCAL_STAGING=1 (the tests, on lavapipe).
  bool stages_into_device_local() const { return stage_copies_; }
  VkQueue queue() const { return queue_; }
  VkCommandPool command_pool() const { return pool_; }

  // Records commands with `record`, submits them and waits.
  void submit_and_wait(const std::function<void(VkCommandBuffer)>& record);

 private:
  std::shared_ptr<VulkanInstance> instance_;
  VkPhysicalDevice physical_;
  int index_;
  VkPhysicalDeviceProperties properties_{};
  VkPhysicalDeviceMemoryProperties memory_{};
  bool float64_ = false, int64_ = false, denorm_preserve32_ = false;
  bool stage_copies_ = false;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
};

// Throws Error(kResource) naming `what` when result is not VK_SUCCESS.
void vk_check(VkResult result, const std::string& what);

// Records `record` into `commands` (reset first) and submits it to `queue`,
// signalling `fence` (reset first) when done; does not wait. `index` names
// the device in an error. One place for what VulkanDevice::submit_and_wait
// and a staging slot (command_slot.h) both submit.
void record_and_submit(VkDevice device, VkQueue queue, int index, VkCommandBuffer commands, VkFence fence,
                       const std::function<void(VkCommandBuffer)>& record);

}  // namespace k3
