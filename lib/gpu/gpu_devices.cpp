// The gpu layer's front (gpu.h) in a build with Vulkan: listing and probing
// the devices, opening one for a run's products.
#include <algorithm>
#include <string>

#include "common/error.h"
#include "gpu/fma_probe.h"
#include "gpu/fma_probe_rate.h"
#include "gpu/gpu.h"
#include "gpu/gpu_backend.h"
#include "gpu/shader_variant.h"
#include "gpu/vulkan_context.h"
#include "kernels/matmul.h"

namespace k3 {
namespace {

const char* device_type(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

uint64_t largest_local_heap(VkPhysicalDevice physical) {
  VkPhysicalDeviceMemoryProperties memory;
  vkGetPhysicalDeviceMemoryProperties(physical, &memory);
  uint64_t best = 0;
  for (uint32_t i = 0; i < memory.memoryHeapCount; ++i)
    if (memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      best = std::max(best, memory.memoryHeaps[i].size);
  return best;
}

}  // namespace

bool gpu_built() { return true; }
const char* gpu_not_built_reason() { return ""; }

std::vector<GpuDeviceInfo> list_gpu_devices() {
  const std::shared_ptr<VulkanInstance> instance = VulkanInstance::shared();
  std::vector<GpuDeviceInfo> out;
  const std::vector<VkPhysicalDevice> physical = instance->physical_devices();
  for (size_t i = 0; i < physical.size(); ++i) {
    GpuDeviceInfo info;
    info.index = static_cast<int>(i);
    info.memory_bytes = largest_local_heap(physical[i]);
    try {
      VulkanDevice device(instance, physical[i], info.index);
      info.name = device.name();
      info.type = device_type(device.properties().deviceType);
      info.float64 = device.has_float64();
      info.fma_fused = probe_fma_fused(device);
      const MatmulShaderChoice choice = choose_matmul_shader(
          {info.fma_fused, device.has_shader_float64(), device.has_shader_int64(), device.denorm_preserve32()});
      info.native_shaders = choice.variant == MatmulShaderVariant::kNative;
      info.unusable_reason = choice.why_not;
      info.fp32_gflops = probe_fp32_gflops(device);
    } catch (const Error& e) {
      VkPhysicalDeviceProperties p;
      vkGetPhysicalDeviceProperties(physical[i], &p);
      info.name = p.deviceName;
      info.type = device_type(p.deviceType);
      info.unusable_reason = e.message();
    }
    out.push_back(info);
  }
  return out;
}

std::unique_ptr<kernels::ComputeBackend> open_gpu_backend(int index, uint64_t budget_bytes) {
  const std::shared_ptr<VulkanInstance> instance = VulkanInstance::shared();
  const std::vector<VkPhysicalDevice> physical = instance->physical_devices();
  if (index < 0 || static_cast<size_t>(index) >= physical.size())
    throw Error(ExitCode::kUsage, "there is no such Vulkan device (" + std::to_string(physical.size()) +
                                      " found; the doctor lists them)");
  auto device = std::make_unique<VulkanDevice>(instance, physical[static_cast<size_t>(index)], index);
  const bool fused = probe_fma_fused(*device);
  return std::make_unique<GpuBackend>(std::move(device), kernels::kernel_target_lanes(), fused, budget_bytes);
}

}  // namespace k3
