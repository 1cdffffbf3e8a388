// GpuBackend's kept layer weights: a layer-major chunk runs each trunk
// product of a layer once per sub-batch (model/forward_pass_chunk.cpp), so
// without them every sub-batch of 256 rows uploads the layer again (an
// 8,192-token chunk, 32 times). Kept on the device from the layer's first
// product to its release, the weights cross the bus once per layer and
// chunk. Routed experts are not kept: each already runs once per chunk on
// all its rows. MLA's kv_b, read by its attention rather than a product, is
// kept in the same span (layer_constant).
#include <algorithm>
#include <cstring>
#include <memory>

#include "common/error.h"
#include "gpu/gpu_backend.h"
#include "gpu/vulkan_buffer.h"
#include "gpu/vulkan_context.h"

namespace k3 {

void GpuBackend::limit_layer_weights(uint64_t bytes) { layer_weight_limit_ = bytes; }

void GpuBackend::begin_layer_weights() {
  kept_.clear();  // another layer's (or chunk's) weights, even at the same pointers
  kept_constants_.clear();
  keeping_layer_ = true;
}

void GpuBackend::end_layer_weights() noexcept {
  keeping_layer_ = false;
  kept_.clear();  // the products are done: no dispatch reads them
  kept_constants_.clear();
}

uint64_t GpuBackend::kept_buffer_bytes() const {
  uint64_t bytes = 0;
  for (const KeptMatrix& m : kept_)
    for (const KeptSlice& s : m.slices) bytes += s.weights->size() + (s.scales ? s.scales->size() : 0);
  for (const KeptConstant& k : kept_constants_) bytes += k.buffer->size();
  return bytes;
}

VulkanBuffer* GpuBackend::layer_constant(const void* host, size_t bytes) {
  if (!keeping_layer_) return nullptr;
  for (KeptConstant& k : kept_constants_)
    if (k.host == host && k.bytes == bytes) {
      weight_reused_bytes_ += bytes;
      return k.buffer.get();
    }
  // Within the plan's share as the products' copies are (a buffer of at
  // least 16 bytes, with the word past the end).
  const uint64_t need = std::max<uint64_t>(16, bytes + 4);
  if (kept_buffer_bytes() + need > layer_weight_limit_) return nullptr;
  auto buffer = std::make_unique<VulkanBuffer>(*device_);
  try {
    grow(*buffer, bytes + 4);
  } catch (const Error&) {
    return nullptr;  // past --gpu-mb or what the device will allocate: uploaded per call
  }
  std::memcpy(buffer->data(), host, bytes);
  upload_bytes_ += bytes;
  weight_upload_bytes_ += bytes;
  weight_kept_bytes_ += bytes;
  kept_constants_.push_back({host, bytes, std::move(buffer)});
  return kept_constants_.back().buffer.get();
}

GpuBackend::KeptMatrix* GpuBackend::layer_weights(const void* weights, const void* scales, size_t rows, size_t cols,
                                                  bool mx, size_t slice_rows) {
  if (!keeping_layer_) return nullptr;
  for (KeptMatrix& m : kept_)
    if (m.weights == weights && m.scales == scales && m.rows == rows && m.cols == cols && m.mx == mx &&
        m.slice_rows == slice_rows)
      return &m;
  // Each slice in buffers of its own, as the stage holds it: the weights
  // (and scales) and the word the shader may read past their end.
  const size_t row_bytes = mx ? cols / 2 : cols * sizeof(uint16_t), scale_row_bytes = mx ? cols / 32 : 0;
  uint64_t need = 0;
  for (size_t r0 = 0; r0 < rows; r0 += slice_rows) {
    const size_t m = std::min(slice_rows, rows - r0);
    need += std::max<uint64_t>(16, m * row_bytes + 4) + (mx ? std::max<uint64_t>(16, m * scale_row_bytes + 4) : 0);
  }
  // Whole matrices in use order: one that does not fit uploads per call.
  if (kept_buffer_bytes() + need > layer_weight_limit_) return nullptr;
  kept_.push_back({weights, scales, rows, cols, slice_rows, mx, {}});
  KeptMatrix& kept = kept_.back();
  try {
    for (size_t r0 = 0; r0 < rows; r0 += slice_rows) {
      const size_t m = std::min(slice_rows, rows - r0);
      KeptSlice& slice = kept.slices.emplace_back();
      slice.weights = std::make_unique<VulkanBuffer>(*device_, VulkanBuffer::Memory::kDeviceLocal);
      grow(*slice.weights, m * row_bytes + 4);
      if (mx) {
        slice.scales = std::make_unique<VulkanBuffer>(*device_, VulkanBuffer::Memory::kDeviceLocal);
        grow(*slice.scales, m * scale_row_bytes + 4);
      }
    }
  } catch (const Error&) {
    // Past --gpu-mb or what the device will allocate: uploaded per call,
    // as without keeping (the same bits).
    kept_.pop_back();
    return nullptr;
  }
  return &kept;
}

}  // namespace k3
