// The plan's figure for the device memory of a run's products
// (gpu_matmul_device_bytes, gpu/gpu.h): GpuBackend's buffers (the weights
// and MXFP4 scales of its staging slots, activations in, products out),
// each grown to its largest call and kept; and its KDA recurrence's three
// (gpu_kda_device_bytes); the latent caches its attention keeps
// (gpu_latent_cache_device_bytes); what AttnRes mixing grows the shared
// activation buffers to beyond that (gpu_attn_res_device_bytes); a chunk's
// block states kept there (gpu_chunk_block_device_bytes). Built with and
// without Vulkan, so a plan reads the same.
#include <algorithm>
#include <cstdlib>

#include "gpu/gpu.h"

namespace k3 {

namespace {
// VulkanBuffer::reserve's smallest buffer.
uint64_t buffer_bytes(uint64_t bytes) { return std::max<uint64_t>(bytes, 16); }
}  // namespace

uint64_t gpu_stage_bytes() {
  const char* v = std::getenv("K3_GPU_STAGE_BYTES");
  const unsigned long long bytes = v ? std::strtoull(v, nullptr, 10) : 0;
  return bytes > 0 ? bytes : kGpuStageBytes;
}

uint64_t gpu_matmul_device_bytes(const GpuProductBound& largest, uint64_t tokens, uint64_t stage_bytes,
                                 bool device_local_copies) {
  if (largest.weight_bytes == 0 || tokens == 0) return 0;
  // A slice holds at most the stage's bytes, or one row where a row is
  // larger (a BF16 row of `cols`, the widest), never more than the product;
  // an MXFP4 slice's scales are its packed bytes / 16.
  const uint64_t slice = std::min(largest.weight_bytes, std::max(stage_bytes, largest.cols * 2));
  const uint64_t slots = largest.weight_bytes > stage_bytes ? 2 : 1;
  // The shaders read whole 32-bit words: 4 bytes past a slice's end.
  uint64_t bytes = slots * buffer_bytes(slice + 4);
  if (largest.scale_bytes > 0) bytes += slots * buffer_bytes(std::min(largest.scale_bytes, slice / 16) + 4);
  const uint64_t activations =
      buffer_bytes(tokens * largest.cols * sizeof(float)) + buffer_bytes(tokens * largest.rows * sizeof(float));
  // Staged into device-local memory, the weights and the activations twice.
  return (device_local_copies ? 2 : 1) * (bytes + activations);
}

uint64_t gpu_kda_device_bytes(uint64_t heads, uint64_t dim, uint64_t tokens, uint64_t sequences) {
  if (heads == 0 || dim == 0 || tokens == 0) return 0;
  const uint64_t hd = heads * dim;
  return std::max<uint64_t>(sequences, 1) * buffer_bytes(hd * dim * sizeof(float)) +
         buffer_bytes(tokens * (4 * hd + heads) * sizeof(float)) + buffer_bytes(tokens * hd * sizeof(float));
}

uint64_t gpu_latent_cache_device_bytes(uint64_t caches, uint64_t positions, uint64_t stride, bool device_local_twin) {
  if (caches == 0 || positions == 0 || stride == 0) return 0;
  // The shader reads whole words; the host's stage is as large at most.
  return (device_local_twin ? 2 : 1) * buffer_bytes(caches * positions * stride * sizeof(float) + 4);
}

GpuAttnResWords gpu_attn_res_words(uint64_t values, uint64_t hidden, uint64_t tokens) {
  return {hidden + (hidden + 1) / 2 + values * tokens * hidden, tokens * hidden + tokens * values};
}

uint64_t gpu_attn_res_device_bytes(const GpuProductBound& largest, uint64_t product_tokens, uint64_t values,
                                   uint64_t hidden, uint64_t tokens) {
  if (values == 0 || hidden == 0 || tokens == 0) return 0;
  const GpuAttnResWords words = gpu_attn_res_words(values, hidden, tokens);
  // The products' activations in and out (0 where there are none).
  const bool products = largest.weight_bytes > 0 && product_tokens > 0;
  const uint64_t x = products ? buffer_bytes(product_tokens * largest.cols * sizeof(float)) : 0;
  const uint64_t y = products ? buffer_bytes(product_tokens * largest.rows * sizeof(float)) : 0;
  const uint64_t in = buffer_bytes(words.in * 4), out = buffer_bytes(words.out * 4);
  return (in > x ? in - x : 0) + (out > y ? out - y : 0);
}

uint64_t gpu_chunk_block_device_bytes(uint64_t blocks, uint64_t hidden, uint64_t tokens, bool device_local_twin) {
  if (blocks == 0 || hidden == 0 || tokens == 0) return 0;
  const uint64_t block = tokens * hidden * sizeof(float);
  return buffer_bytes(blocks * block) + (device_local_twin ? buffer_bytes(block) : 0);
}

}  // namespace k3
