// GpuBackend's kept block states: a layer-major chunk's AttnRes block states
// (model/prefill_chunk.h ChunkBlocks) are written once, when their block
// opens, and then read by both mixes of every later layer and the head's.
// Copied to the device once, in chunk_blocks_ ([capacity, rows, hidden]
// floats), they are read there by attn_res_mix.comp (binding 2), so a mix
// copies only p and the blocks not kept: per layer and sub-batch, ~4.4
// blocks' rows fewer, twice, at K3's geometry. Where the device stages into
// device-local memory, chunk_blocks_ holds one block, the one opening, and
// the command buffer that copies it into chunk_blocks_twin_ (at its place
// there) precedes every mix that reads it (gpu_device_twins.cpp).
#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "gpu/gpu_backend.h"
#include "gpu/vulkan_buffer.h"
#include "gpu/vulkan_context.h"

namespace k3 {

void GpuBackend::limit_chunk_blocks(uint64_t bytes) { chunk_block_limit_ = bytes; }

size_t GpuBackend::begin_chunk_blocks(size_t rows, size_t hidden, size_t blocks) {
  // Whatever an earlier chunk kept is of other rows.
  chunk_blocks_kept_ = chunk_block_capacity_ = 0;
  chunk_block_rows_ = rows;
  chunk_block_hidden_ = hidden;
  // The mixes that read them need the shader's float64 and int64.
  if (rows == 0 || hidden == 0 || blocks == 0 || !device_->has_float64()) return 0;
  const uint64_t block_bytes = static_cast<uint64_t>(rows) * hidden * sizeof(float);
  // One binding of 32-bit word offsets holds them all (as the latent caches').
  const uint64_t binding = std::min<uint64_t>(device_->max_binding_bytes() - 16, UINT32_MAX);
  // With a twin, the share holds the host's one block besides it.
  const uint64_t stage = twins() ? block_bytes : 0;
  const uint64_t room = chunk_block_limit_ > stage ? chunk_block_limit_ - stage : 0;
  const uint64_t fit = std::min(room, binding) / block_bytes;
  const size_t capacity = static_cast<size_t>(std::min<uint64_t>(blocks, fit));
  if (capacity == 0) return 0;
  try {
    grow(*chunk_blocks_, twins() ? block_bytes : capacity * block_bytes);
    if (twins()) grow(*chunk_blocks_twin_, capacity * block_bytes);
  } catch (const Error&) {
    // Past --gpu-mb or what the device will allocate: the mixes copy the
    // blocks as they would without keeping them (the same bits).
    return 0;
  }
  chunk_block_capacity_ = capacity;
  return capacity;
}

bool GpuBackend::keep_chunk_block(size_t index, const float* rows) {
  // Blocks are kept in the order they open: a block the device could not
  // keep leaves every later one to the mixes' copies.
  if (index != chunk_blocks_kept_ || index >= chunk_block_capacity_) return false;
  const size_t block_floats = chunk_block_rows_ * chunk_block_hidden_, bytes = block_floats * sizeof(float);
  std::memcpy(static_cast<float*>(chunk_blocks_->data()) + (twins() ? 0 : index * block_floats), rows, bytes);
  if (twins()) {
    const VkBufferCopy region{0, index * bytes, bytes};
    device_->submit_and_wait(
        [&](VkCommandBuffer commands) { record_twin_copy(commands, *chunk_blocks_, *chunk_blocks_twin_, {region}); });
    block_twin_bytes_ += bytes;
  }
  ++chunk_blocks_kept_;
  block_upload_bytes_ += block_floats * sizeof(float);
  upload_bytes_ += block_floats * sizeof(float);
  return true;
}

bool GpuBackend::attn_res_mix_kept(size_t kept, const float* const* blocks, size_t block_count, size_t row0,
                                   const float* p, size_t n, size_t hidden, const uint16_t* proj, const float* norm,
                                   float eps, float* out) {
  if (kept == 0 || kept > chunk_blocks_kept_ || kept > block_count || hidden != chunk_block_hidden_ ||
      row0 + n > chunk_block_rows_)
    return false;
  if (!mix_values(kept, blocks, block_count, row0, p, n, hidden, proj, norm, eps, out)) return false;
  block_kept_bytes_ += static_cast<uint64_t>(kept) * n * hidden * sizeof(float);
  return true;
}

}  // namespace k3
