// The matrix products of kernels/matmul.h on a Vulkan device, with the CPU
// kernels' bits: one invocation per output, its accumulators in the order of
// this machine's CPU target (kernel_target_lanes()), fma fused by the device
// or emulated with one rounding. The activations are copied into a
// host-visible buffer per call; the weights go in row slices of at most
// gpu_stage_bytes() through two staging slots, each with its own fence: the
// host copies the next slice into one while the device multiplies by the
// other, so a product's upload and compute overlap. Each output is still
// computed by one invocation over all its columns, so how the rows are
// sliced never changes a bit. Activations beyond the device's largest
// binding go in token slices. The buffers are in device-local host-visible
// memory where the device has it (vulkan_context.h); where it has none, a
// slice's dispatch first copies it into device-local memory on the device
// (vkCmdCopyBuffer and a barrier in the same command buffer), so the
// shader does not read it over the bus; so do a product's activations (X
// copied in before its first slice, Y back after its last).
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/latent_cache_slots.h"
#include "gpu/shader_variant.h"
#include "kernels/compute_backend.h"

namespace k3 {

class CommandSlot;
class ComputePipeline;
class VulkanBuffer;
class VulkanDevice;

class GpuBackend : public kernels::ComputeBackend {
 public:
  // lanes: the summation order to follow (the CPU target's float lanes:
  // 8 for AVX2, 16 for AVX-512, the targets whose kernels use FMA; others
  // are refused). fma_fused: the probe's answer for this device.
  // budget_bytes: the most device memory the buffers may hold (0: no cap).
  // variant: the shaders' build, by default choose_matmul_shader's for the
  // probe's answer and the device's features (tests force the native one on
  // a device whose fma is not fused, to check its order); refused with one
  // line naming the device where no build is exact.
  GpuBackend(std::unique_ptr<VulkanDevice> device, size_t lanes, bool fma_fused, uint64_t budget_bytes = 0,
             std::optional<MatmulShaderVariant> variant = std::nullopt);
  ~GpuBackend() override;

  bool bf16(const uint16_t* W, size_t rows, size_t cols, const float* X, size_t n, float* Y) override;
  bool mxfp4(const uint8_t* packed, const uint8_t* scales, size_t rows, size_t cols, const float* X, size_t n,
             float* Y) override;

  // The chunk's row and elementwise ops (gpu_<op>.cpp each).
  bool rms_norm(const float* x, size_t n, size_t dim, const float* weight, float eps, float* out) override;
  bool situ(float* g, const float* u, size_t count, const kernels::SituParams& p) override;
  // MLA's attention (gpu_attention.cpp, shaders/latent_attention.comp): one
  // workgroup per (row, head), in attention_scores.cpp's order and
  // roundings, the exact FP32 emulation on every device. The kv_b weights,
  // the queries and the caches go in the product buffers (so the budget and
  // the peak count them); declined without shaderFloat64/shaderInt64.
  bool latent_attention(const kernels::LatentAttentionCall& call) override;
  uint64_t attention_calls() const { return attention_calls_; }
  // The KDA recurrence (gpu_kda.cpp, shaders/kda_recurrence.comp).
  bool kda_recurrence(float* S, const float* q, const float* k, const float* v, const float* g, const float* beta,
                      size_t heads, size_t dim, size_t n, float* o) override;
  // The KDA layer's short conv (gpu_kda_conv.cpp, shaders/kda_conv.comp).
  bool short_conv_silu(const uint16_t* w, float* carry, float* raw, size_t n, size_t channels, size_t K) override;

  // MLA's latent caches kept on the device between calls
  // (gpu_attention.cpp, latent_cache_slots.h): `caches` slots of
  // `positions` positions, in one buffer made at the first call.
  bool keep_latent_caches(size_t caches, size_t positions) override;

  std::string describe() const override;
  kernels::ComputeBackendCounters counters() const override;

  // Products run on the device and bytes copied to it, so far.
  uint64_t products() const { return products_; }
  uint64_t upload_bytes() const { return upload_bytes_; }
  uint64_t peak_bytes() const { return peak_bytes_; }
  // The staging: dispatches (one per row slice and token slice) and bytes
  // copied while the other slot's dispatch was in flight, both exact; and
  // how often a slot's previous slice was still running when it was to be
  // refilled (timing: many means the device, not the copy, bounds a product).
  uint64_t dispatches() const { return dispatches_; }
  uint64_t overlapped_upload_bytes() const { return overlapped_upload_bytes_; }
  uint64_t busy_waits() const { return busy_waits_; }
  bool fma_fused() const { return fma_fused_; }
  MatmulShaderVariant variant() const { return variant_; }
  VulkanDevice& device() { return *device_; }

 private:
  // A staging slot: the weights (and MXFP4 scales) of one row slice and the
  // dispatch that reads them; where the device stages into device-local
  // memory, their device-local copies, made by the dispatch's command buffer
  // before it runs, and the bytes the host filled.
  struct KeptMatrix;  // a layer's kept weights (below)
  struct Stage {
    std::unique_ptr<VulkanBuffer> weights, scales;
    std::unique_ptr<VulkanBuffer> local_weights, local_scales;
    size_t weight_bytes = 0, scale_bytes = 0;
    std::unique_ptr<CommandSlot> slot;
  };
  // One product in row slices of at most stage_bytes_ of weights (and the
  // binding limit), alternating between the two stages, over token slices
  // that fit a binding; `upload_rows(stage, r0, r1)` fills the stage's
  // buffers with rows [r0, r1) and returns the bytes copied. `weights` and
  // `scales` (null for BF16) name the matrix for the layer's kept copies.
  template <class Upload>
  void run(ComputePipeline& pipeline, bool mx, const void* weights, const void* scales, size_t rows, size_t cols,
           size_t row_bytes, const float* X, size_t n, float* Y, Upload upload_rows);
  // The row slices of one token slice, pipelined; waits for both stages.
  // With `kept`, each slice dispatches on its kept copy (filled from the
  // stage by the first dispatch that needs it).
  template <class Upload>
  void run_slices(ComputePipeline& pipeline, bool mx, size_t rows, size_t cols, size_t slice_rows, size_t tn,
                  Upload& upload_rows, KeptMatrix* kept);
  // Waits for both stages, without throwing (after an error).
  void drain() noexcept;
  // Grows `buffer` to `bytes`, within the budget (Error(kResource) naming
  // kGpuMbSetting beyond it), and keeps the peak of all six.
  void grow(VulkanBuffer& buffer, size_t bytes);

  std::unique_ptr<VulkanDevice> device_;
  size_t lanes_;
  bool fma_fused_;
  // The shaders' NATIVE_FMA: the device's own fma() and float arithmetic
  // run (fused, and it keeps FP32 subnormals); else the emulation.
  bool native_fma_ = false;
  MatmulShaderVariant variant_ = MatmulShaderVariant::kExact;
  std::unique_ptr<ComputePipeline> bf16_, mxfp4_;
  Stage stages_[2];
  std::unique_ptr<VulkanBuffer> x_, y_;
  uint64_t stage_bytes_;
  uint64_t products_ = 0, upload_bytes_ = 0, peak_bytes_ = 0, budget_bytes_ = 0;
  uint64_t dispatches_ = 0, overlapped_upload_bytes_ = 0, busy_waits_ = 0;
  uint64_t device_local_copies_ = 0;  // slices copied into device-local memory
  // MLA's attention: its pipeline, made at the first call.
  std::unique_ptr<ComputePipeline> attention_;
  uint64_t attention_calls_ = 0;
  // Tests: at this product the device is reported lost (K3_GPU_FAIL_AFTER),
  // or out of memory (K3_GPU_OUT_OF_MEMORY_AFTER), as a driver would.
  uint64_t fail_after_ = UINT64_MAX, out_of_memory_after_ = UINT64_MAX;

  // Each op's pipeline, made at its first call, and its count.
  std::unique_ptr<ComputePipeline> rms_norm_, situ_;
  uint64_t rms_norms_ = 0, situ_steps_ = 0;
  // The KDA recurrence's pipeline (made at its first call), its token
  // inputs and outputs (the heads' states: kda_states_ below); recurrences
  // run.
  std::unique_ptr<ComputePipeline> kda_;
  std::unique_ptr<VulkanBuffer> kda_in_, kda_out_;
  uint64_t kda_recurrences_ = 0;

  // MLA's latent caches on the device: the buffer of their slots, which
  // cache each slot holds, rows copied and rows found there already.
  bool place_latent_caches(const kernels::LatentAttentionCall& call, std::vector<size_t>& cache_at);
  std::unique_ptr<VulkanBuffer> latent_;
  LatentCacheSlots latent_slots_;
  uint64_t latent_upload_bytes_ = 0, latent_kept_bytes_ = 0;
  // The KDA layer's short conv: its pipeline (made at its first call; it
  // uses the recurrence's buffers) and the convs run.
  std::unique_ptr<ComputePipeline> kda_conv_;
  uint64_t kda_convs_ = 0;
  // AttnRes mixing (gpu_attn_res.cpp, shaders/attn_res_mix.comp): one
  // workgroup per row, in attn_res.cpp's order and roundings, the exact FP32
  // emulation on every device; the key weights and the values go in the
  // activations' buffer, the mixed rows come back in the products' (so the
  // budget and the peak count them). Declined without shaderFloat64.
 public:
  bool attn_res_mix(const float* const* blocks, size_t block_count, const float* p, size_t n, size_t hidden,
                    const uint16_t* proj, const float* norm, float eps, float* out) override;

 private:
  std::unique_ptr<ComputePipeline> attn_res_;
  uint64_t attn_res_mixes_ = 0;

  // The chunk's AttnRes block states kept on the device
  // (gpu_chunk_blocks.cpp): one buffer of [capacity, rows, hidden] floats,
  // each block copied when it opens; the mixes read them there and copy
  // only the values not kept. Within the plan's share (limit_chunk_blocks),
  // one binding and what the device will allocate; beyond, fewer blocks or
  // none are kept (the mixes copy them, the same bits).
 public:
  void limit_chunk_blocks(uint64_t bytes) override;
  size_t begin_chunk_blocks(size_t rows, size_t hidden, size_t blocks) override;
  bool keep_chunk_block(size_t index, const float* rows) override;
  bool attn_res_mix_kept(size_t kept, const float* const* blocks, size_t block_count, size_t row0, const float* p,
                         size_t n, size_t hidden, const uint16_t* proj, const float* norm, float eps,
                         float* out) override;

 private:
  // The mix with its first `kept` values read from chunk_blocks_, rows
  // row0 on (gpu_attn_res.cpp; attn_res_mix is kept = 0).
  bool mix_values(size_t kept, const float* const* blocks, size_t block_count, size_t row0, const float* p, size_t n,
                  size_t hidden, const uint16_t* proj, const float* norm, float eps, float* out);
  std::unique_ptr<VulkanBuffer> chunk_blocks_;
  uint64_t chunk_block_limit_ = UINT64_MAX;
  size_t chunk_block_rows_ = 0, chunk_block_hidden_ = 0;
  size_t chunk_block_capacity_ = 0, chunk_blocks_kept_ = 0;  // blocks the buffer holds, blocks copied so far
  uint64_t block_upload_bytes_ = 0, block_kept_bytes_ = 0;

  // The KDA layer's norms and gates (gpu_kda_<op>.cpp, shaders/kda_<op>.comp):
  // a workgroup per row (the norms) or an invocation per value (the gates),
  // the exact FP32 emulation on every device, the
  // rows in place in the KDA recurrence's input buffer (never more of it
  // than the recurrence of the same tokens takes: runtime/device_plan's
  // bound), constants where a product's weights go. Declined without
  // shaderFloat64. Each pipeline is made at its first call.
 public:
  bool kda_l2_normalize(float* x, size_t rows, size_t dim, float scale) override;
  bool kda_gates(float* g, float* beta, size_t tokens, size_t heads, size_t dim, const float* A_log,
                 const float* dt_bias, const kernels::KdaGateBound& bound) override;
  bool kda_output(float* o, const float* gate, size_t rows, size_t dim, const float* o_norm, float eps) override;

 private:
  std::unique_ptr<ComputePipeline> kda_l2norm_, kda_gate_, kda_output_;
  uint64_t kda_norms_ = 0, kda_gates_ = 0, kda_outputs_ = 0;

  // A layer's weights kept on the device across the chunk's sub-batches
  // (gpu_layer_weights.cpp): a product's weights, the first time the span
  // sees them, go through a staging slot as always and are copied on the
  // device into buffers of their own (device-local memory, one per row
  // slice, so a matrix beyond one binding is kept in slices); later
  // products on the same weights dispatch on those. Whole matrices, in use
  // order, within the plan's share (limit_layer_weights), --gpu-mb and what
  // the device will allocate; the rest upload per call (the same words).
 public:
  void limit_layer_weights(uint64_t bytes) override;
  void begin_layer_weights() override;
  void end_layer_weights() noexcept override;

 private:
  struct KeptSlice {
    std::unique_ptr<VulkanBuffer> weights, scales;
    bool filled = false;  // copied from a stage by a submitted dispatch
    uint64_t bytes = 0;   // the weights' and scales' bytes it holds
  };
  // What names a kept matrix within its layer, and its slices.
  struct KeptMatrix {
    const void* weights;
    const void* scales;
    size_t rows, cols, slice_rows;
    bool mx;
    std::vector<KeptSlice> slices;
  };
  // The kept copy of these weights, made (its buffers allocated, unfilled)
  // when the span is open and it fits; null: upload per call.
  KeptMatrix* layer_weights(const void* weights, const void* scales, size_t rows, size_t cols, bool mx,
                            size_t slice_rows);
  // Records the copy of `stage`'s filled bytes into `weights` (and `scales`
  // for MXFP4) and the barrier that makes them visible to the dispatch.
  void record_copy(VkCommandBuffer commands, const Stage& stage, const VulkanBuffer& weights,
                   const VulkanBuffer* scales) const;
  uint64_t kept_buffer_bytes() const;
  // A layer's weights read by an op other than a product (MLA's kv_b in its
  // attention), kept within the same span: the host's bytes copied once into
  // a buffer of their own (and the word the shader may read past them), in
  // host-visible memory as the ops' other inputs are; null where the span is
  // closed or they do not fit (the op uploads them per call).
  struct KeptConstant {
    const void* host;
    size_t bytes;
    std::unique_ptr<VulkanBuffer> buffer;
  };
  VulkanBuffer* layer_constant(const void* host, size_t bytes);
  std::vector<KeptConstant> kept_constants_;
  bool keeping_layer_ = false;
  std::vector<KeptMatrix> kept_;
  uint64_t layer_weight_limit_ = UINT64_MAX;
  uint64_t weight_upload_bytes_ = 0, weight_kept_bytes_ = 0, weight_reused_bytes_ = 0;
  // Where the device stages into device-local memory, a product's
  // activations too: X copied into local_x_ by its first slice's command
  // buffer, Y written to local_y_ and copied back by its last one.
  std::unique_ptr<VulkanBuffer> local_x_, local_y_;
  // Records X's copy into local_x_ before the shader reads it
  // (`into_shader`), or Y's from local_y_ after it wrote it, with the
  // barriers that order them.
  void record_activation_copy(VkCommandBuffer commands, const VulkanBuffer& from, const VulkanBuffer& to, size_t bytes,
                              bool into_shader) const;

  // The KDA states kept on the device across a layer's sub-batches
  // (gpu_kda_states.cpp): a buffer per sequence's state, in a pool kept
  // from span to span (as many buffers as a chunk's sequences: the device
  // plan counts them). Within a span a state goes to the device at its first
  // recurrence and back at a sync or the span's end; outside one, the first
  // buffer takes each call's state in and out.
 public:
  void begin_kda_states() override;
  void sync_kda_state(float* S) override;
  void end_kda_states() noexcept override;

 private:
  struct KdaStateSlot {
    float* host = nullptr;  // the host state it keeps (null: free, or a call's outside a span)
    size_t bytes = 0;       // the state's
    bool current = false;   // its last call finished: the buffer holds the state after it
    std::unique_ptr<VulkanBuffer> buffer;
  };
  // The buffer a recurrence on S runs on: its kept copy, else a free
  // buffer filled from S (kept from then on within a span).
  KdaStateSlot& kda_state_slot(float* S, size_t bytes);
  // Copies a slot's state back into `S` (counted).
  void download_kda_state(const KdaStateSlot& slot, float* S, size_t bytes) noexcept;
  uint64_t kda_state_buffer_bytes() const;
  bool keeping_kda_states_ = false;
  std::vector<KdaStateSlot> kda_states_;
  uint64_t kda_state_upload_bytes_ = 0, kda_state_download_bytes_ = 0;
  // Device-local twins of what the ops keep on the device across calls
  // (gpu_device_twins.cpp), where the device stages into device-local
  // memory (a discrete GPU without host-visible device-local memory): the
  // chunk's kept block states and MLA's latent caches live in device-local
  // buffers, which their shaders read. What is new goes through the
  // host-visible buffer (chunk_blocks_ one block, latent_ a call's appended
  // rows, packed) and the command buffer that copies it into the twin
  // orders the copy before the shader's reads with a barrier: each block
  // crosses the bus once, when it opens, and each latent row once. Elsewhere
  // the host-visible buffers are read in place and the twins stay empty.
 private:
  bool twins() const;
  // Records the copies of `regions` of `from` into `twin` and the barrier
  // from the copies to the shaders' reads.
  void record_twin_copy(VkCommandBuffer commands, const VulkanBuffer& from, const VulkanBuffer& twin,
                        const std::vector<VkBufferCopy>& regions) const;
  std::unique_ptr<VulkanBuffer> chunk_blocks_twin_, latent_twin_;
  // The rows a latent call appends, packed in latent_, and where each goes
  // in latent_twin_ (copied by the call's first dispatch).
  std::vector<VkBufferCopy> latent_copies_;
  uint64_t block_twin_bytes_ = 0, latent_twin_bytes_ = 0;
  // The norms' and SiTU steps' rows (and a norm's weight) copied into the
  // products' device-local twins and back, per call (gpu_rms_norm.cpp,
  // gpu_situ.cpp).
  uint64_t row_twin_bytes_ = 0;
};

}  // namespace k3
