// The gpu layer of a build without Vulkan (lib/CMakeLists.txt compiles this
// file instead of the vulkan_* ones): no devices, --gpu refused.
#include "common/error.h"
#include "gpu/gpu.h"
#include "kernels/compute_backend.h"

namespace k3 {

bool gpu_built() { return false; }

const char* gpu_not_built_reason() {
  return "this k3 was built without Vulkan (install libvulkan-dev and glslc, then re-run cmake and rebuild)";
}

std::vector<GpuDeviceInfo> list_gpu_devices() { return {}; }

std::unique_ptr<kernels::ComputeBackend> open_gpu_backend(int, uint64_t) {
  throw Error(ExitCode::kUsage, gpu_not_built_reason());
}

}  // namespace k3
