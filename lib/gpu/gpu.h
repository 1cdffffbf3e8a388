// Layer gpu: Vulkan compute devices running the batch's matrix products with the CPU kernels' bits.
//
// What the rest of k3 asks of a compute device: which ones there are, and
// one opened for a run. Built without Vulkan (no libvulkan-dev or glslc at
// configure time), there are none and opening one is refused with a line
// saying so. docs/gpu.md describes the exactness rules.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace k3 {

namespace kernels {
class ComputeBackend;
}

// The keys messages name the run's device settings by (common/setting_spelling.h;
// the tools' --gpu and --gpu-mb).
inline constexpr const char* kGpuSetting = "gpu";
inline constexpr const char* kGpuMbSetting = "gpu_mb";

// One Vulkan device as k3-doctor lists it.
struct GpuDeviceInfo {
  int index = 0;
  std::string name;
  std::string type;             // "integrated", "discrete", "cpu", "virtual", "other"
  uint64_t memory_bytes = 0;    // the largest device-local heap
  bool float64 = false;         // shaderFloat64 and shaderInt64: the exact emulation can run
  bool fma_fused = false;       // the start-up probe: fma() rounds once
  bool native_shaders = false;  // runs the products' native-fma build (fused, no 64-bit types)
  double fp32_gflops = 0;       // the FP32 rate probe: the device's own fma() chains (fused or not)
  std::string unusable_reason;  // empty: k3 can run its products there
};

// Whether this k3 was built with the Vulkan path, and if not, why not (one line).
bool gpu_built();
const char* gpu_not_built_reason();

// Every Vulkan device, probed (fma fused or not). Empty without Vulkan or
// when the loader finds no device; throws Error(kResource) when the loader
// is there but the instance cannot be made.
std::vector<GpuDeviceInfo> list_gpu_devices();

// The matrix products of one run on device `index` (list_gpu_devices's
// numbering), in the order of this machine's CPU target. Refused with one
// line naming why (the caller prefixes the flag): built without Vulkan
// (kUsage), no such device (kUsage), a device that can neither fuse fma nor
// emulate it, or a CPU target without a shader (kResource). `budget_bytes`
// (0: none) caps the device memory its buffers may hold; a product that
// would need more ends the run with one line naming kGpuMbSetting (kResource).
std::unique_ptr<kernels::ComputeBackend> open_gpu_backend(int index, uint64_t budget_bytes = 0);

// The most weight bytes GpuBackend stages at once in each of its two slots
// (a product's rows go to the device in slices of at most this, or one
// row where a row is larger): 16 MiB, or K3_GPU_STAGE_BYTES where set (the
// tests, to slice the tiny model's products).
inline constexpr uint64_t kGpuStageBytes = 16ull << 20;
uint64_t gpu_stage_bytes();

// The most device memory GpuBackend's buffers hold for products whose
// weights are at most `weight_bytes` (MXFP4 scales `scale_bytes`), `cols`
// inputs and `rows` outputs wide, over at most `tokens` rows of
// activations: each buffer is grown to the largest call and kept; the
// weights (and scales) in one staging slot while every product fits one
// slice, in two of a slice's bytes each once one does not (the plan's
// figure for kGpuMbSetting; an upper bound, exact when one product is the
// largest in every respect).
struct GpuProductBound {
  uint64_t weight_bytes = 0, scale_bytes = 0, cols = 0, rows = 0;
};
// With `device_local_copies` (a device that stages into device-local
// memory), each slot's weights and scales, and the activations in and out,
// are held twice: where the host writes (or reads) them and their
// device-local copy.
uint64_t gpu_matmul_device_bytes(const GpuProductBound& largest, uint64_t tokens,
                                 uint64_t stage_bytes = gpu_stage_bytes(), bool device_local_copies = false);

// The most device memory GpuBackend's KDA recurrence holds for `heads` heads
// of `dim` over at most `tokens` rows (0 without KDA layers): the heads'
// state of each of `sequences` sequences (a chunk keeps each one's across
// a layer's sub-batches), the tokens' q, k, v, decays and beta, their
// outputs.
uint64_t gpu_kda_device_bytes(uint64_t heads, uint64_t dim, uint64_t tokens, uint64_t sequences = 1);

// The most device memory GpuBackend keeps MLA's latent caches in between
// attention calls (keep_latent_caches): `caches` caches (the run's
// sequences x MLA layers) of `positions` positions (its context) of
// `stride` floats (kv_lora_rank + qk_rope_head_dim) each, in one buffer
// (0 without MLA layers). With `device_local_twin` (a device that stages
// into device-local memory), twice: the slots in a device-local twin, and
// the host-visible buffer a call's new rows go through, as large where a
// call copies every cache whole.
uint64_t gpu_latent_cache_device_bytes(uint64_t caches, uint64_t positions, uint64_t stride,
                                       bool device_local_twin = false);
// AttnRes mixing's words in GpuBackend's activation buffers for `values`
// values a row (the block states and the partial sum) of `hidden` over
// `tokens` rows: in, the key weight's norm (FP32) and projection (BF16
// pairs) then the values; out, the mixed rows then each row's scores.
struct GpuAttnResWords {
  uint64_t in = 0, out = 0;
};
GpuAttnResWords gpu_attn_res_words(uint64_t values, uint64_t hidden, uint64_t tokens);
// What the mixes add to gpu_matmul_device_bytes(largest, product_tokens):
// they share the products' activation buffers, each grown to the larger
// need, so only the part beyond the products' counts.
uint64_t gpu_attn_res_device_bytes(const GpuProductBound& largest, uint64_t product_tokens, uint64_t values,
                                   uint64_t hidden, uint64_t tokens);
// The most device memory GpuBackend keeps a chunk's AttnRes block states in
// (begin_chunk_blocks): `blocks` block states of `tokens` rows of `hidden`
// floats, in one buffer (0 without). With `device_local_twin`, that buffer
// is a device-local twin and the host-visible one holds the block opening.
uint64_t gpu_chunk_block_device_bytes(uint64_t blocks, uint64_t hidden, uint64_t tokens,
                                      bool device_local_twin = false);

}  // namespace k3
