// The Vulkan instance and device. Validation (K3_GPU_VALIDATION=1) makes
// every error the layer reports count, so a test can assert there were none;
// asking for it without the layer installed is an error, not a quiet run
// without it.
#include "gpu/vulkan_context.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/error.h"

namespace k3 {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";
std::atomic<size_t> g_validation_errors{0};

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                     VkDebugUtilsMessageTypeFlagsEXT,
                                                     const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    ++g_validation_errors;
    std::fprintf(stderr, "vulkan validation: %s\n", data->pMessage);
  }
  return VK_FALSE;
}

bool layer_installed(const char* name) {
  uint32_t count = 0;
  vkEnumerateInstanceLayerProperties(&count, nullptr);
  std::vector<VkLayerProperties> layers(count);
  vkEnumerateInstanceLayerProperties(&count, layers.data());
  for (const VkLayerProperties& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

bool device_extension_offered(VkPhysicalDevice physical, const char* name) {
  uint32_t count = 0;
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> extensions(count);
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, extensions.data());
  for (const VkExtensionProperties& e : extensions)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

// shaderDenormPreserveFloat32, through VK_KHR_shader_float_controls (the
// instance asks for Vulkan 1.1, where float controls are an extension).
bool keeps_f32_denorms(VkPhysicalDevice physical) {
  VkPhysicalDeviceFloatControlsPropertiesKHR controls{};
  controls.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES_KHR;
  VkPhysicalDeviceProperties2 properties{};
  properties.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  properties.pNext = &controls;
  vkGetPhysicalDeviceProperties2(physical, &properties);
  return controls.shaderDenormPreserveFloat32 == VK_TRUE;
}

}  // namespace

void vk_check(VkResult result, const std::string& what) {
  if (result == VK_SUCCESS) return;
  const char* why = result == VK_ERROR_OUT_OF_DEVICE_MEMORY    ? "out of device memory"
                    : result == VK_ERROR_OUT_OF_HOST_MEMORY    ? "out of host memory"
                    : result == VK_ERROR_DEVICE_LOST           ? "the device was lost"
                    : result == VK_ERROR_INITIALIZATION_FAILED ? "initialization failed"
                                                               : "failed";
  throw Error(ExitCode::kResource, "gpu: " + what + ": " + why + " (VkResult " + std::to_string(result) + ")");
}

bool VulkanInstance::validation_enabled() {
  const char* v = std::getenv("K3_GPU_VALIDATION");
  return v && std::strcmp(v, "1") == 0;
}

size_t VulkanInstance::validation_errors() { return g_validation_errors.load(); }

std::shared_ptr<VulkanInstance> VulkanInstance::shared() {
  static const auto* const instance = new std::shared_ptr<VulkanInstance>(create());
  return *instance;
}

std::shared_ptr<VulkanInstance> VulkanInstance::create() {
  std::shared_ptr<VulkanInstance> self(new VulkanInstance());
  const bool validate = validation_enabled();
  if (validate && !layer_installed(kValidationLayer))
    throw Error(ExitCode::kResource,
                "K3_GPU_VALIDATION=1: the Vulkan validation layer is not installed (Debian: vulkan-validationlayers)");
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "k3";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  const char* layers[] = {kValidationLayer};
  const char* extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
  VkDebugUtilsMessengerCreateInfoEXT messenger{};
  messenger.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
  messenger.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
  messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger.pfnUserCallback = on_validation_message;
  if (validate) {
    info.enabledLayerCount = 1;
    info.ppEnabledLayerNames = layers;
    info.enabledExtensionCount = 1;
    info.ppEnabledExtensionNames = extensions;
    info.pNext = &messenger;
  }
  vk_check(vkCreateInstance(&info, nullptr, &self->instance_), "creating a Vulkan instance");
  if (validate) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(self->instance_, "vkCreateDebugUtilsMessengerEXT"));
    if (!create) throw Error(ExitCode::kResource, "K3_GPU_VALIDATION=1: VK_EXT_debug_utils is not available");
    vk_check(create(self->instance_, &messenger, nullptr, &self->messenger_), "installing the validation messenger");
  }
  return self;
}

VulkanInstance::~VulkanInstance() {
  if (messenger_) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance_, messenger_, nullptr);
  }
  if (instance_) vkDestroyInstance(instance_, nullptr);
}

std::vector<VkPhysicalDevice> VulkanInstance::physical_devices() const {
  uint32_t count = 0;
  vk_check(vkEnumeratePhysicalDevices(instance_, &count, nullptr), "listing Vulkan devices");
  std::vector<VkPhysicalDevice> devices(count);
  vk_check(vkEnumeratePhysicalDevices(instance_, &count, devices.data()), "listing Vulkan devices");
  devices.resize(count);
  return devices;
}

VulkanDevice::VulkanDevice(std::shared_ptr<VulkanInstance> instance, VkPhysicalDevice physical, int index)
    : instance_(std::move(instance)), physical_(physical), index_(index) {
  vkGetPhysicalDeviceProperties(physical_, &properties_);
  vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
  const VkMemoryPropertyFlags shared =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  bool shares = false;
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i)
    shares = shares || (memory_.memoryTypes[i].propertyFlags & shared) == shared;
  const char* force = std::getenv("K3_GPU_DEVICE_LOCAL_STAGING");
  stage_copies_ = !shares || (force != nullptr && std::string(force) == "1");
  VkPhysicalDeviceFeatures supported{};
  vkGetPhysicalDeviceFeatures(physical_, &supported);
  float64_ = supported.shaderFloat64;
  int64_ = supported.shaderInt64;
  const char* float_controls = VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME;
  const bool has_float_controls = device_extension_offered(physical_, float_controls);
  denorm_preserve32_ = has_float_controls && keeps_f32_denorms(physical_);

  uint32_t families = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &families, nullptr);
  std::vector<VkQueueFamilyProperties> family(families);
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &families, family.data());
  uint32_t compute = families;
  for (uint32_t f = 0; f < families && compute == families; ++f)
    if (family[f].queueFlags & VK_QUEUE_COMPUTE_BIT) compute = f;
  if (compute == families)
    throw Error(ExitCode::kResource, "gpu " + std::to_string(index_) + " (" + name() + "): no compute queue");

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{};
  queue.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queue.queueFamilyIndex = compute;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  VkPhysicalDeviceFeatures enabled{};
  enabled.shaderFloat64 = supported.shaderFloat64;
  enabled.shaderInt64 = supported.shaderInt64;
  VkDeviceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  info.pEnabledFeatures = &enabled;
  if (has_float_controls) {  // the shaders' DenormPreserve mode needs it
    info.enabledExtensionCount = 1;
    info.ppEnabledExtensionNames = &float_controls;
  }
  vk_check(vkCreateDevice(physical_, &info, nullptr, &device_), "opening gpu " + std::to_string(index_));
  vkGetDeviceQueue(device_, compute, 0, &queue_);

  VkCommandPoolCreateInfo pool{};

  pool.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool.queueFamilyIndex = compute;
  vk_check(vkCreateCommandPool(device_, &pool, nullptr, &pool_), "creating a command pool");
  VkCommandBufferAllocateInfo alloc{};
  alloc.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  alloc.commandPool = pool_;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  vk_check(vkAllocateCommandBuffers(device_, &alloc, &commands_), "allocating a command buffer");
  VkFenceCreateInfo fence{};
  fence.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  vk_check(vkCreateFence(device_, &fence, nullptr, &fence_), "creating a fence");
}

VulkanDevice::~VulkanDevice() {
  if (!device_) return;
  vkDeviceWaitIdle(device_);
  if (fence_) vkDestroyFence(device_, fence_, nullptr);
  if (pool_) vkDestroyCommandPool(device_, pool_, nullptr);
  vkDestroyDevice(device_, nullptr);
}

uint32_t VulkanDevice::host_memory_type(uint32_t bits) const {
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  for (const VkMemoryPropertyFlags want : {host | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, host})
    for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i)
      if ((bits & (1u << i)) && (memory_.memoryTypes[i].propertyFlags & want) == want) return i;
  throw Error(ExitCode::kResource, "gpu " + std::to_string(index_) + " (" + name() + "): no host-visible memory type");
}

uint32_t VulkanDevice::device_memory_type(uint32_t bits) const {
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i)
    if ((bits & (1u << i)) && (memory_.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)) return i;
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i)
    if (bits & (1u << i)) return i;
  throw Error(ExitCode::kResource, "gpu " + std::to_string(index_) + " (" + name() + "): no memory type for a buffer");
}

void record_and_submit(VkDevice device, VkQueue queue, int index, VkCommandBuffer commands, VkFence fence,
                       const std::function<void(VkCommandBuffer)>& record) {
  vk_check(vkResetCommandBuffer(commands, 0), "resetting a command buffer");
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vk_check(vkBeginCommandBuffer(commands, &begin), "recording commands");
  record(commands);
  vk_check(vkEndCommandBuffer(commands), "recording commands");
  VkSubmitInfo submit{};
  submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &commands;
  vk_check(vkResetFences(device, 1, &fence), "resetting a fence");
  vk_check(vkQueueSubmit(queue, 1, &submit, fence), "submitting to gpu " + std::to_string(index));
}

void VulkanDevice::submit_and_wait(const std::function<void(VkCommandBuffer)>& record) {
  record_and_submit(device_, queue_, index_, commands_, fence_, record);
  vk_check(vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX), "waiting for gpu " + std::to_string(index_));
}

}  // namespace k3
