// The plan's figure for the device memory of a run's products
// (gpu_matmul_device_bytes, gpu/gpu.h): GpuMatmul's four buffers (weights,
// MXFP4 scales, activations in, products out), each grown to its largest
// call and kept; and its KDA recurrence's three (gpu_kda_device_bytes). Built with and without Vulkan, so a plan reads
// the same.
#include <algorithm>

#include "gpu/gpu.h"

namespace k3 {

namespace {
// VulkanBuffer::reserve's smallest buffer.
uint64_t buffer_bytes(uint64_t bytes) { return std::max<uint64_t>(bytes, 16); }
}  // namespace

uint64_t gpu_matmul_device_bytes(const GpuProductBound& largest, uint64_t tokens) {
  if (largest.weight_bytes == 0 || tokens == 0) return 0;
  // The shaders read whole 32-bit words: 4 bytes past a slice's end.
  uint64_t bytes = buffer_bytes(largest.weight_bytes + 4);
  if (largest.scale_bytes > 0) bytes += buffer_bytes(largest.scale_bytes + 4);
  return bytes + buffer_bytes(tokens * largest.cols * sizeof(float)) +
         buffer_bytes(tokens * largest.rows * sizeof(float));
}

uint64_t gpu_kda_device_bytes(uint64_t heads, uint64_t dim, uint64_t tokens) {
  if (heads == 0 || dim == 0 || tokens == 0) return 0;
  const uint64_t hd = heads * dim;
  return buffer_bytes(hd * dim * sizeof(float)) + buffer_bytes(tokens * (4 * hd + heads) * sizeof(float)) +
         buffer_bytes(tokens * hd * sizeof(float));
}

}  // namespace k3
