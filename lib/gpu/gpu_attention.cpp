// GpuBackend::latent_attention: MLA's attention on the device
// (shaders/latent_attention.comp), in the product buffers:
//   stages_[0].weights  kv_b_proj, BF16 [heads, nope + vdim, kvl] (or its
//             copy kept for the layer's sub-batches: layer_constant)
//   x_        per row (its cache's first word in latent_, the positions it
//             sees), then the queries [rows, heads, nope + rope]
//   y_        the heads' outputs [rows, heads, vdim], then each workgroup's
//             scratch (q_lat, ctx, the scores of its positions)
//   latent_   the caches, one per slot of latent_slots_ (latent_cache_slots.h):
//             kept between calls where keep_latent_caches was given, so
//             only the rows appended since the last call are copied; where
//             the device stages into device-local memory, the slots are in
//             latent_twin_, latent_ holds only the call's new rows, packed,
//             and the first dispatch's command buffer copies them to their
//             places in the twin (gpu_device_twins.cpp)
// The items (row, head) go in dispatches of at most kScratchWords of scratch.
#include <algorithm>
#include <cstring>
#include <vector>

#include "gpu/compute_pipeline.h"
#include "gpu/gpu_backend.h"
#include "gpu/latent_cache_slots.h"
#include "gpu/vulkan_buffer.h"
#include "gpu/vulkan_context.h"

namespace k3 {
namespace {

// The shader's push constants (latent_attention.comp); word offsets.
struct AttentionShape {
  uint32_t heads, nope, rope, vdim, kvl, scale_bits, q_at, item0, scratch_at, scratch_stride;
};
constexpr size_t kScratchWords = size_t{16} << 20;  // 64 MB of scores at most per dispatch
constexpr size_t kMaxGroups = 65535;                // maxComputeWorkGroupCount's guaranteed minimum

}  // namespace

// Puts the call's caches in the slots' buffer (latent_, or latent_twin_;
// kept copies where configured, else every cache whole in slots sized to
// the call) and gives each one's first word there; false where they do not
// fit the kept slots or a binding.
bool GpuBackend::place_latent_caches(const kernels::LatentAttentionCall& a, std::vector<size_t>& cache_at) {
  const size_t stride = a.kvl + a.rope;
  const size_t limit = std::min<size_t>(device_->max_binding_bytes() - 16, size_t{UINT32_MAX});
  VulkanBuffer& slots = twins() ? *latent_twin_ : *latent_;
  std::vector<LatentCacheSlots::Placement> placed(a.cache_count);
  size_t slot_words = 0;
  if (latent_slots_.keeps() && a.cache_generations != nullptr) {
    const std::vector<size_t> positions(a.cache_positions, a.cache_positions + a.cache_count);
    slot_words = latent_slots_.positions() * stride;
    if (latent_slots_.slots() * slot_words * 4 + 4 > limit) return false;
    // The slots' buffer at its full size from the first call: grown, it
    // would lose the copies.
    if (slots.size() < latent_slots_.slots() * slot_words * 4 + 4) {
      latent_slots_.forget();
      grow(slots, latent_slots_.slots() * slot_words * 4 + 4);
    }
    if (!latent_slots_.place({a.cache_generations, a.cache_count}, positions, placed)) return false;
  } else {
    for (size_t i = 0; i < a.cache_count; ++i) {
      slot_words = std::max(slot_words, a.cache_positions[i] * stride);
      placed[i] = {i, 0};
    }
    if (a.cache_count * slot_words * 4 + 4 > limit) return false;
    grow(slots, a.cache_count * slot_words * 4 + 4);  // the shader reads whole words
  }
  // The words each cache lacks on the device: [from, to) of its rows.
  size_t new_words = 0;
  for (size_t i = 0; i < a.cache_count; ++i) new_words += (a.cache_positions[i] - placed[i].from) * stride;
  if (twins()) grow(*latent_, new_words * 4 + 4);
  latent_copies_.clear();
  float* latent = static_cast<float*>(latent_->data());
  size_t packed = 0;  // words of new rows in latent_ so far (with a twin)
  for (size_t i = 0; i < a.cache_count; ++i) {
    cache_at[i] = placed[i].slot * slot_words;
    const size_t from = placed[i].from * stride, to = a.cache_positions[i] * stride;
    // With a twin, latent_ stages the new rows, packed, for the copy.
    const size_t at = twins() ? packed : cache_at[i] + from;
    std::memcpy(latent + at, a.caches[i] + from, (to - from) * 4);
    if (twins() && to > from) {
      latent_copies_.push_back({at * 4, (cache_at[i] + from) * 4, (to - from) * 4});
      latent_twin_bytes_ += (to - from) * 4;
      packed += to - from;
    }
    latent_upload_bytes_ += (to - from) * 4;
    latent_kept_bytes_ += from * 4;
    upload_bytes_ += (to - from) * 4;
  }
  if (latent_slots_.keeps()) latent_slots_.commit();
  return true;
}

bool GpuBackend::latent_attention(const kernels::LatentAttentionCall& a) {
  if (!device_->has_float64() || a.rows == 0 || a.heads == 0 || a.kvl == 0) return false;
  const size_t qh = a.nope + a.rope;
  size_t max_npos = 0;
  for (size_t t = 0; t < a.rows; ++t) max_npos = std::max(max_npos, a.row_pos[t] + 1);
  const size_t q_at = 2 * a.rows, x_words = q_at + a.rows * a.heads * qh;
  const size_t items = a.rows * a.heads, out_words = items * a.vdim, item_words = 2 * a.kvl + max_npos;
  const size_t group_items = std::min({items, kMaxGroups, std::max<size_t>(1, kScratchWords / item_words)});
  const size_t y_words = out_words + group_items * item_words;
  const size_t kvb_bytes = a.heads * (a.nope + a.vdim) * a.kvl * sizeof(uint16_t);
  // Offsets are 32-bit words in the shader; what a binding cannot hold stays
  // on the CPU (the same bits).
  const size_t limit = std::min<size_t>(device_->max_binding_bytes() - 16, size_t{UINT32_MAX});
  if (x_words * 4 > limit || y_words * 4 > limit || kvb_bytes + 4 > limit) return false;
  std::vector<size_t> cache_at(a.cache_count);
  if (!place_latent_caches(a, cache_at)) return false;
  if (!attention_)
    attention_ = std::make_unique<ComputePipeline>(*device_, "latent_attention", 4, sizeof(AttentionShape), 0);

  // kv_b: kept on the device for the layer's sub-batches where its span is
  // open (gpu_layer_weights.cpp), else copied per call.
  VulkanBuffer* kv_b = layer_constant(a.kv_b, kvb_bytes);
  if (!kv_b) {
    grow(*stages_[0].weights, kvb_bytes + 4);  // the shader reads whole words
    std::memcpy(stages_[0].weights->data(), a.kv_b, kvb_bytes);
    upload_bytes_ += kvb_bytes;
    weight_upload_bytes_ += kvb_bytes;
    kv_b = stages_[0].weights.get();
  }
  grow(*x_, x_words * 4);
  uint32_t* x = static_cast<uint32_t*>(x_->data());
  for (size_t t = 0; t < a.rows; ++t) {
    x[2 * t] = static_cast<uint32_t>(cache_at[a.row_cache[t]]);
    x[2 * t + 1] = static_cast<uint32_t>(a.row_pos[t] + 1);
  }
  std::memcpy(x + q_at, a.q, a.rows * a.heads * qh * 4);
  upload_bytes_ += x_words * 4;
  grow(*y_, y_words * 4);

  AttentionShape shape{static_cast<uint32_t>(a.heads),   static_cast<uint32_t>(a.nope),
                       static_cast<uint32_t>(a.rope),    static_cast<uint32_t>(a.vdim),
                       static_cast<uint32_t>(a.kvl),     0,
                       static_cast<uint32_t>(q_at),      0,
                       static_cast<uint32_t>(out_words), static_cast<uint32_t>(item_words)};
  std::memcpy(&shape.scale_bits, &a.scale, sizeof(float));
  const std::vector<const VulkanBuffer*> buffers = {kv_b, x_.get(), y_.get(),
                                                    twins() ? latent_twin_.get() : latent_.get()};
  for (size_t i0 = 0; i0 < items; i0 += group_items) {
    shape.item0 = static_cast<uint32_t>(i0);
    const uint32_t groups = static_cast<uint32_t>(std::min(group_items, items - i0));
    // The first dispatch's command buffer copies the new rows into the twin.
    device_->submit_and_wait([&](VkCommandBuffer commands) {
      if (i0 == 0) record_twin_copy(commands, *latent_, *latent_twin_, latent_copies_);
      attention_->record(commands, 0, buffers, &shape, groups, 1);
    });
  }
  std::memcpy(a.out, y_->data(), out_words * 4);
  ++attention_calls_;
  return true;
}

bool GpuBackend::keep_latent_caches(size_t caches, size_t positions) {
  latent_slots_.configure(caches, positions);
  return latent_slots_.keeps();
}

}  // namespace k3
