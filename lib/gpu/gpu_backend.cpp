#include "gpu/gpu_backend.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/setting_spelling.h"
#include "gpu/command_slot.h"
#include "gpu/compute_pipeline.h"
#include "gpu/gpu.h"
#include "gpu/shader_variant.h"
#include "gpu/vulkan_buffer.h"
#include "gpu/vulkan_context.h"

namespace k3 {
namespace {

// The shaders' push constants (matmul_bf16.comp, matmul_mxfp4.comp).
struct Shape {
  uint32_t rows, cols, n, lanes, out_rows, row_base;
};
constexpr uint32_t kGroupRows = 64;  // local_size_x

uint32_t u32(size_t v, const char* what) {
  if (v > UINT32_MAX) throw Error(ExitCode::kResource, std::string("gpu: ") + what + " is too large for the device");
  return static_cast<uint32_t>(v);
}

}  // namespace

GpuBackend::GpuBackend(std::unique_ptr<VulkanDevice> device, size_t lanes, bool fma_fused, uint64_t budget_bytes,
                       std::optional<MatmulShaderVariant> variant)
    : device_(std::move(device)),
      lanes_(lanes),
      fma_fused_(fma_fused),
      stage_bytes_(gpu_stage_bytes()),
      budget_bytes_(budget_bytes) {
  if (lanes_ != 8 && lanes_ != 16)
    throw Error(ExitCode::kResource, "this CPU's matrix products (" + std::to_string(lanes_) +
                                         "-lane vectors, no FMA) have no device shader yet; the device follows the "
                                         "AVX2 and AVX-512 kernels");
  const MatmulShaderChoice choice = choose_matmul_shader(
      {fma_fused_, device_->has_shader_float64(), device_->has_shader_int64(), device_->denorm_preserve32()});
  variant_ = variant ? *variant : choice.variant;
  if (variant_ == MatmulShaderVariant::kNone)
    throw Error(ExitCode::kResource,
                "gpu " + std::to_string(device_->index()) + " (" + device_->name() + "): " + choice.why_not);
  if (const char* fail = std::getenv("K3_GPU_FAIL_AFTER")) fail_after_ = std::strtoull(fail, nullptr, 10);
  if (const char* oom = std::getenv("K3_GPU_OUT_OF_MEMORY_AFTER"))
    out_of_memory_after_ = std::strtoull(oom, nullptr, 10);
  // A forced build (tests) takes the probe's answer as it is.
  native_fma_ = variant ? fma_fused_ : choice.native_fma;
  const uint32_t native = native_fma_ ? 1 : 0;
  bf16_ = std::make_unique<ComputePipeline>(*device_, matmul_shader_name("matmul_bf16", variant_).c_str(), 3,
                                            sizeof(Shape), native, 2);
  mxfp4_ = std::make_unique<ComputePipeline>(*device_, matmul_shader_name("matmul_mxfp4", variant_).c_str(), 4,
                                             sizeof(Shape), native, 2);
  for (Stage& stage : stages_) {
    stage.weights = std::make_unique<VulkanBuffer>(*device_);
    stage.scales = std::make_unique<VulkanBuffer>(*device_);
    stage.local_weights = std::make_unique<VulkanBuffer>(*device_, VulkanBuffer::Memory::kDeviceLocal);
    stage.local_scales = std::make_unique<VulkanBuffer>(*device_, VulkanBuffer::Memory::kDeviceLocal);
    stage.slot = std::make_unique<CommandSlot>(*device_);
  }
  x_ = std::make_unique<VulkanBuffer>(*device_);
  y_ = std::make_unique<VulkanBuffer>(*device_);
  local_x_ = std::make_unique<VulkanBuffer>(*device_, VulkanBuffer::Memory::kDeviceLocal);
  local_y_ = std::make_unique<VulkanBuffer>(*device_, VulkanBuffer::Memory::kDeviceLocal);
  kda_in_ = std::make_unique<VulkanBuffer>(*device_);
  kda_out_ = std::make_unique<VulkanBuffer>(*device_);
  latent_ = std::make_unique<VulkanBuffer>(*device_);
  chunk_blocks_ = std::make_unique<VulkanBuffer>(*device_);
  chunk_blocks_twin_ = std::make_unique<VulkanBuffer>(*device_, VulkanBuffer::Memory::kDeviceLocal);
  latent_twin_ = std::make_unique<VulkanBuffer>(*device_, VulkanBuffer::Memory::kDeviceLocal);
}

GpuBackend::~GpuBackend() { drain(); }

void GpuBackend::drain() noexcept {
  for (Stage& stage : stages_) {
    try {
      stage.slot->wait();
    } catch (const Error&) {
      // The device was lost: the error that ends the run is already thrown.
    }
  }
}

void GpuBackend::grow(VulkanBuffer& buffer, size_t bytes) {
  bytes = std::max<size_t>(bytes, 16);  // VulkanBuffer::reserve's smallest
  if (bytes <= buffer.size()) return;
  uint64_t held = 0;
  for (const Stage& stage : stages_)
    held += stage.weights->size() + stage.scales->size() + stage.local_weights->size() + stage.local_scales->size();
  held +=
      x_->size() + y_->size() + local_x_->size() + local_y_->size() + kept_buffer_bytes() + kda_state_buffer_bytes();
  for (const auto* b : {kda_in_.get(), kda_out_.get(), latent_.get(), chunk_blocks_.get(), chunk_blocks_twin_.get(),
                        latent_twin_.get()})
    held += b->size();
  const uint64_t after = held - buffer.size() + bytes;
  if (budget_bytes_ > 0 && after > budget_bytes_)
    throw Error(ExitCode::kResource, "gpu " + std::to_string(device_->index()) + ": a matrix product needs " +
                                         std::to_string(after) + " bytes of device memory, more than " +
                                         spelled(kGpuMbSetting) + " allows (" + std::to_string(budget_bytes_) +
                                         " bytes)");
  buffer.reserve(bytes);
  peak_bytes_ = std::max(peak_bytes_, after);
}

template <class Upload>
void GpuBackend::run(ComputePipeline& pipeline, bool mx, const void* weights, const void* scales, size_t rows,
                     size_t cols, size_t row_bytes, const float* X, size_t n, float* Y, Upload upload_rows) {
  // Room for the word the shaders may read past a slice's last byte.
  const size_t limit = device_->max_binding_bytes() - 16;
  const size_t stage = static_cast<size_t>(std::min<uint64_t>(limit, stage_bytes_));
  const size_t slice_rows = std::min(rows, std::max<size_t>(1, stage / std::max<size_t>(1, row_bytes)));
  const size_t token_bytes = std::max(cols, rows) * sizeof(float);
  const size_t slice_tokens = std::min(n, std::max<size_t>(1, limit / token_bytes));
  if (row_bytes > limit || token_bytes > limit)
    throw Error(ExitCode::kResource, "gpu: a matrix row of " + std::to_string(cols) +
                                         " columns does not fit the device's largest buffer binding");
  if (products_ >= fail_after_) vk_check(VK_ERROR_DEVICE_LOST, "running a matrix product (K3_GPU_FAIL_AFTER)");
  if (products_ >= out_of_memory_after_)
    vk_check(VK_ERROR_OUT_OF_DEVICE_MEMORY, "allocating a product's buffers (K3_GPU_OUT_OF_MEMORY_AFTER)");
  try {
    KeptMatrix* kept = layer_weights(weights, scales, rows, cols, mx, slice_rows);
    for (size_t t0 = 0; t0 < n; t0 += slice_tokens) {
      const size_t tn = std::min(slice_tokens, n - t0);
      grow(*x_, tn * cols * sizeof(float));
      std::memcpy(x_->data(), X + t0 * cols, tn * cols * sizeof(float));
      upload_bytes_ += tn * cols * sizeof(float);
      grow(*y_, tn * rows * sizeof(float));
      if (device_->stages_into_device_local()) {
        grow(*local_x_, tn * cols * sizeof(float));
        grow(*local_y_, tn * rows * sizeof(float));
      }
      run_slices(pipeline, mx, rows, cols, slice_rows, tn, upload_rows, kept);
      // The slices wrote their columns of Y's rows [t0, t0 + tn) in place.
      std::memcpy(Y + t0 * rows, y_->data(), tn * rows * sizeof(float));
    }
  } catch (...) {
    drain();
    kept_.clear();  // a kept slice may not have been filled
    throw;
  }
  ++products_;
}

template <class Upload>
void GpuBackend::run_slices(ComputePipeline& pipeline, bool mx, size_t rows, size_t cols, size_t slice_rows, size_t tn,
                            Upload& upload_rows, KeptMatrix* kept) {
  size_t k = 0;
  for (size_t r0 = 0; r0 < rows; r0 += slice_rows, ++k) {
    const size_t r1 = std::min(rows, r0 + slice_rows);
    Stage& stage = stages_[k % 2];
    // Its previous slice must be done before its buffers are refilled.
    if (stage.slot->wait()) ++busy_waits_;
    KeptSlice* held = kept ? &kept->slices[k] : nullptr;
    const bool fill = !held || !held->filled;  // the weights go through the stage
    if (fill) {
      const bool overlapped = stages_[(k + 1) % 2].slot->pending();
      const size_t copied = upload_rows(stage, r0, r1);
      upload_bytes_ += copied;
      weight_upload_bytes_ += copied;
      if (overlapped) overlapped_upload_bytes_ += copied;
      if (held) {
        held->bytes = copied;
        weight_kept_bytes_ += copied;
      }
    } else {
      weight_reused_bytes_ += held->bytes;
    }
    const Shape shape{u32(r1 - r0, "a row slice"),   u32(cols, "cols"), u32(tn, "a token slice"),
                      static_cast<uint32_t>(lanes_), u32(rows, "rows"), u32(r0, "a row slice")};
    // A kept slice is device-local already; else the staged one may be copied there.
    const bool local = !held && device_->stages_into_device_local();
    if (local) {
      grow(*stage.local_weights, stage.weight_bytes + 4);  // the shader reads whole words
      if (mx) grow(*stage.local_scales, stage.scale_bytes + 4);
    }
    const VulkanBuffer* weights = held ? held->weights.get() : local ? stage.local_weights.get() : stage.weights.get();
    std::vector<const VulkanBuffer*> buffers = {weights};
    if (mx) buffers.push_back(held ? held->scales.get() : local ? stage.local_scales.get() : stage.scales.get());
    const bool local_io = device_->stages_into_device_local();
    buffers.push_back(local_io ? local_x_.get() : x_.get());
    buffers.push_back(local_io ? local_y_.get() : y_.get());
    const uint32_t set = static_cast<uint32_t>(k % 2);
    stage.slot->submit([&](VkCommandBuffer cb) {
      // A barrier orders the commands submitted before it to the queue, so
      // X's copy in the first slice's command buffer precedes every slice's
      // reads, and Y's in the last one follows every slice's writes.
      if (local_io && r0 == 0) record_activation_copy(cb, *x_, *local_x_, tn * cols * sizeof(float), true);
      if (local || (held && fill)) record_copy(cb, stage, *buffers[0], mx ? buffers[1] : nullptr);
      pipeline.record(cb, set, buffers, &shape, u32((r1 - r0 + kGroupRows - 1) / kGroupRows, "rows"),
                      u32(tn, "tokens"));
      if (local_io && r1 == rows) record_activation_copy(cb, *local_y_, *y_, tn * rows * sizeof(float), false);
    });
    if (held) held->filled = true;
    ++dispatches_;
    // A kept slice's fill replaces the slot's copy into device-local memory.
    if (local || (held && fill && device_->stages_into_device_local())) ++device_local_copies_;
  }
  for (Stage& stage : stages_) stage.slot->wait();
}

void GpuBackend::record_activation_copy(VkCommandBuffer commands, const VulkanBuffer& from, const VulkanBuffer& to,
                                        size_t bytes, bool into_shader) const {
  auto barrier = [&](const VulkanBuffer& buffer, VkAccessFlags src, VkAccessFlags dst, VkPipelineStageFlags from_stage,
                     VkPipelineStageFlags to_stage) {
    const VkBufferMemoryBarrier b = whole_buffer_barrier(buffer, src, dst);
    vkCmdPipelineBarrier(commands, from_stage, to_stage, 0, 0, nullptr, 1, &b, 0, nullptr);
  };
  // The products' rows are written by the shader before they are copied out.
  if (!into_shader)
    barrier(from, VK_ACCESS_SHADER_WRITE_BIT, VK_ACCESS_TRANSFER_READ_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            VK_PIPELINE_STAGE_TRANSFER_BIT);
  const VkBufferCopy region{0, 0, bytes};
  vkCmdCopyBuffer(commands, from.handle(), to.handle(), 1, &region);
  if (into_shader)
    barrier(to, VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_SHADER_READ_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
  else
    barrier(to, VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_HOST_READ_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_PIPELINE_STAGE_HOST_BIT);
}

void GpuBackend::record_copy(VkCommandBuffer commands, const Stage& stage, const VulkanBuffer& weights,
                             const VulkanBuffer* scales) const {
  std::vector<VkBufferMemoryBarrier> barriers;
  auto copy = [&](const VulkanBuffer& from, const VulkanBuffer& to, size_t bytes) {
    const VkBufferCopy region{0, 0, bytes};
    vkCmdCopyBuffer(commands, from.handle(), to.handle(), 1, &region);
    barriers.push_back(whole_buffer_barrier(to, VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_SHADER_READ_BIT));
  };
  // The word past the slice's last byte that the shader may read comes too.
  copy(*stage.weights, weights, stage.weight_bytes + 4);
  if (scales) copy(*stage.scales, *scales, stage.scale_bytes + 4);
  vkCmdPipelineBarrier(commands, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 0, nullptr,
                       static_cast<uint32_t>(barriers.size()), barriers.data(), 0, nullptr);
}

bool GpuBackend::bf16(const uint16_t* W, size_t rows, size_t cols, const float* X, size_t n, float* Y) {
  if (rows == 0 || n == 0 || cols == 0) return false;
  run(*bf16_, false, W, nullptr, rows, cols, cols * sizeof(uint16_t), X, n, Y, [&](Stage& stage, size_t r0, size_t r1) {
    const size_t bytes = (r1 - r0) * cols * sizeof(uint16_t);
    grow(*stage.weights, bytes + 4);  // the shader reads whole words
    std::memcpy(stage.weights->data(), W + r0 * cols, bytes);
    stage.weight_bytes = bytes;
    return bytes;
  });
  return true;
}

bool GpuBackend::mxfp4(const uint8_t* packed, const uint8_t* scales, size_t rows, size_t cols, const float* X, size_t n,
                       float* Y) {
  if (rows == 0 || n == 0 || cols == 0 || cols % 32 != 0) return false;
  run(*mxfp4_, true, packed, scales, rows, cols, cols / 2, X, n, Y, [&](Stage& stage, size_t r0, size_t r1) {
    const size_t bytes = (r1 - r0) * (cols / 2), scale_bytes = (r1 - r0) * (cols / 32);
    grow(*stage.weights, bytes + 4);
    grow(*stage.scales, scale_bytes + 4);
    std::memcpy(stage.weights->data(), packed + r0 * (cols / 2), bytes);
    std::memcpy(stage.scales->data(), scales + r0 * (cols / 32), scale_bytes);
    stage.weight_bytes = bytes;
    stage.scale_bytes = scale_bytes;
    return bytes + scale_bytes;
  });
  return true;
}

kernels::ComputeBackendCounters GpuBackend::counters() const {
  kernels::ComputeBackendCounters c;
  c.products = products_;
  c.upload_bytes = upload_bytes_;
  c.peak_bytes = peak_bytes_;
  c.dispatches = dispatches_;
  c.overlapped_upload_bytes = overlapped_upload_bytes_;
  c.busy_waits = busy_waits_;
  c.rms_norms = rms_norms_;
  c.situ_steps = situ_steps_;
  c.attention = attention_calls_;
  c.kda_recurrences = kda_recurrences_;
  c.latent_upload_bytes = latent_upload_bytes_;
  c.latent_kept_bytes = latent_kept_bytes_;
  c.device_local_staging = device_->stages_into_device_local();
  c.device_local_copies = device_local_copies_;
  c.kda_convs = kda_convs_;
  c.attn_res_mixes = attn_res_mixes_;
  c.block_upload_bytes = block_upload_bytes_;
  c.block_kept_bytes = block_kept_bytes_;
  c.kda_norms = kda_norms_;
  c.kda_gates = kda_gates_;
  c.kda_outputs = kda_outputs_;
  c.weight_upload_bytes = weight_upload_bytes_;
  c.weight_kept_bytes = weight_kept_bytes_;
  c.weight_reused_bytes = weight_reused_bytes_;
  c.kda_state_upload_bytes = kda_state_upload_bytes_;
  c.kda_state_download_bytes = kda_state_download_bytes_;
  c.block_twin_bytes = block_twin_bytes_;
  c.latent_twin_bytes = latent_twin_bytes_;
  c.row_twin_bytes = row_twin_bytes_;
  return c;
}

std::string GpuBackend::describe() const {
  char mb[32];
  std::snprintf(mb, sizeof mb, "%.1f", static_cast<double>(upload_bytes_) / 1e6);
  return "gpu " + std::to_string(device_->index()) + " (" + device_->name() + "): " + std::to_string(products_) +
         " matrix products, " + std::to_string(kda_recurrences_) + " KDA recurrences, " + mb + " MB uploaded, fma " +
         (native_fma_ ? "fused" : "emulated") + (variant_ == MatmulShaderVariant::kNative ? " (native shaders)" : "") +
         ", " + std::to_string(lanes_) + "-lane order";
}

}  // namespace k3
