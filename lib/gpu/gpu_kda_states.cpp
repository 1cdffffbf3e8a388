// GpuBackend's KDA states kept on the device across a layer's sub-batches:
// a layer-major chunk runs each KDA layer's recurrence once per sub-batch
// and sequence (model/forward_pass_chunk.cpp), so without them each
// sequence's state (heads x D x D floats, 6.3 MB at K3) would cross the bus
// twice a sub-batch. Kept from the first call in the span, it goes back
// once, at the span's end, or where the model code syncs it to read it.
// The short conv's carries need no keeping: the next carry is rows of the
// conv's input, which the host holds (gpu_kda_conv.cpp).
#include <cstring>

#include "gpu/gpu_backend.h"
#include "gpu/vulkan_buffer.h"

namespace k3 {

void GpuBackend::begin_kda_states() {
  for (KdaStateSlot& slot : kda_states_) slot.host = nullptr;  // another layer's, even at the same pointers
  keeping_kda_states_ = true;
}

void GpuBackend::sync_kda_state(float* S) {
  if (!keeping_kda_states_) return;
  for (const KdaStateSlot& slot : kda_states_)
    if (slot.host == S && slot.current) download_kda_state(slot, S, slot.bytes);
}

void GpuBackend::end_kda_states() noexcept {
  for (KdaStateSlot& slot : kda_states_) {
    // A state whose last call failed on the device holds some of that
    // call's tokens: its host copy stays as last copied.
    if (slot.host && slot.current) download_kda_state(slot, slot.host, slot.bytes);
    slot.host = nullptr;
  }
  keeping_kda_states_ = false;
}

GpuBackend::KdaStateSlot& GpuBackend::kda_state_slot(float* S, size_t bytes) {
  if (keeping_kda_states_)
    for (KdaStateSlot& slot : kda_states_)
      if (slot.host == S) return slot;
  KdaStateSlot* free = nullptr;
  for (KdaStateSlot& slot : kda_states_)
    if (!slot.host) {
      free = &slot;
      break;
    }
  if (!free) {
    KdaStateSlot& added = kda_states_.emplace_back();
    added.buffer = std::make_unique<VulkanBuffer>(*device_);
    free = &added;
  }
  grow(*free->buffer, bytes);
  std::memcpy(free->buffer->data(), S, bytes);
  upload_bytes_ += bytes;
  kda_state_upload_bytes_ += bytes;
  free->bytes = bytes;
  free->current = true;
  if (keeping_kda_states_) free->host = S;
  return *free;
}

void GpuBackend::download_kda_state(const KdaStateSlot& slot, float* S, size_t bytes) noexcept {
  std::memcpy(S, slot.buffer->data(), bytes);
  kda_state_download_bytes_ += bytes;
}

uint64_t GpuBackend::kda_state_buffer_bytes() const {
  uint64_t bytes = 0;
  for (const KdaStateSlot& slot : kda_states_) bytes += slot.buffer->size();
  return bytes;
}

}  // namespace k3
