#include "model/mla.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/error.h"
#include "common/thread_pool.h"
#include "kernels/activations.h"
#include "kernels/attention_scores.h"
#include "kernels/bf16.h"
#include "kernels/compute_backend.h"
#include "kernels/rms_norm.h"
#include "model/forward_scratch.h"
#include "model/linear.h"

namespace k3 {

int64_t mla_cache_positions(const ModelConfig& c, const MlaCache& cache) {
  return static_cast<int64_t>(cache.latent.size() / static_cast<size_t>(c.kv_lora_rank + c.qk_rope_head_dim));
}

void mla_truncate(const ModelConfig& c, MlaCache& cache, int64_t positions) {
  const size_t stride = static_cast<size_t>(c.kv_lora_rank + c.qk_rope_head_dim);
  if (positions < 0 || positions > mla_cache_positions(c, cache))
    throw Error(ExitCode::kInternal, "MLA truncation past the cached positions");
  const size_t floats = static_cast<size_t>(positions) * stride;
  // Rows cut (rejected drafts, a stopped pass put back): a device's copy of
  // them is stale, whatever is appended next.
  if (floats < cache.latent.size()) cache.generation = new_mla_generation();
  cache.latent.resize(floats);
}

namespace {

// The pieces of MLA's scratch, in carving order; each slot of threads gets
// q_lat, ctx (kvl each) and the scores of up to `positions` positions.
struct MlaScratch {
  float *qa, *q, *ckv, *gate, *o, *slots;
  size_t slot_floats;
  size_t *row_seg, *row_pos;
  static size_t per_slot(const ModelConfig& c, size_t positions) {
    using C = ScratchCarver<float>;
    return 2 * C::padded(c.kv_lora_rank) + C::padded(positions);
  }
  static size_t floats(const ModelConfig& c, size_t n, size_t positions, size_t slots) {
    using C = ScratchCarver<float>;
    const size_t heads = c.mla_num_heads, vdim = c.v_head_dim;
    const size_t qh_dim = c.qk_nope_head_dim + c.qk_rope_head_dim, stride = c.kv_lora_rank + c.qk_rope_head_dim;
    return C::padded(n * c.q_lora_rank) + C::padded(n * heads * qh_dim) + C::padded(n * stride) +
           (c.mla_use_output_gate ? C::padded(n * heads * vdim) : 0) + C::padded(n * heads * vdim) +
           slots * per_slot(c, positions);
  }
  MlaScratch(const ModelConfig& c, size_t n, size_t positions, size_t slots, ForwardScratch& scratch) {
    const size_t heads = c.mla_num_heads, vdim = c.v_head_dim;
    const size_t qh_dim = c.qk_nope_head_dim + c.qk_rope_head_dim, stride = c.kv_lora_rank + c.qk_rope_head_dim;
    ScratchCarver<float> carve(scratch.op_floats(floats(c, n, positions, slots)));
    qa = carve.take(n * c.q_lora_rank);
    q = carve.take(n * heads * qh_dim);
    ckv = carve.take(n * stride);
    gate = c.mla_use_output_gate ? carve.take(n * heads * vdim) : nullptr;
    o = carve.take(n * heads * vdim);
    slot_floats = per_slot(c, positions);
    this->slots = carve.take(slots * slot_floats);
    row_seg = scratch.op_indices(mla_scratch_indices(n));
    row_pos = row_seg + n;
  }
};

// The attention of every (row, head) through the thread's device backend,
// then the output gate on the CPU; false when there is none or it declines.
bool attend_on_backend(const ModelConfig& c, const MlaWeights& w, std::span<const LayerSegment> segments,
                       const MlaScratch& m, size_t n, float scale, ThreadPool* pool) {
  kernels::ComputeBackend* device = kernels::current_compute_backend();
  if (device == nullptr) return false;
  std::vector<const float*> caches(segments.size());
  std::vector<size_t> positions(segments.size());
  std::vector<uint64_t> generations(segments.size());
  for (size_t si = 0; si < segments.size(); ++si) {
    caches[si] = segments[si].state->mla.latent.data();
    positions[si] = static_cast<size_t>(mla_cache_positions(c, segments[si].state->mla));
    generations[si] = segments[si].state->mla.generation;
  }
  const size_t heads = c.mla_num_heads, vdim = c.v_head_dim;
  const kernels::LatentAttentionCall call{n,
                                          heads,
                                          static_cast<size_t>(c.qk_nope_head_dim),
                                          static_cast<size_t>(c.qk_rope_head_dim),
                                          vdim,
                                          static_cast<size_t>(c.kv_lora_rank),
                                          scale,
                                          m.q,
                                          w.kv_b_proj.data,
                                          caches.data(),
                                          positions.data(),
                                          segments.size(),
                                          m.row_seg,
                                          m.row_pos,
                                          m.o,
                                          generations.data()};
  if (!device->latent_attention(call)) return false;
  if (c.mla_use_output_gate)
    parallel_for(pool, n, 1, [&](size_t t0, size_t t1) {
      for (size_t i = t0 * heads * vdim; i < t1 * heads * vdim; ++i) m.o[i] *= kernels::sigmoid(m.gate[i]);
    });
  return true;
}

}  // namespace

size_t mla_scratch_floats(const ModelConfig& c, size_t rows, size_t positions, size_t slots) {
  return MlaScratch::floats(c, rows, positions, std::max<size_t>(slots, 1));
}

void mla_forward(const ModelConfig& c, const MlaWeights& w, MlaCache& cache, const float* x, size_t n, float* out,
                 ThreadPool* pool) {
  ForwardScratch scratch;
  run_one_sequence(&LayerState::mla, cache, n,
                   [&](std::span<const LayerSegment> one) { mla_forward(c, w, one, x, n, out, pool, scratch); });
}

void mla_forward(const ModelConfig& c, const MlaWeights& w, std::span<const LayerSegment> segments, const float* x,
                 size_t n, float* out, ThreadPool* pool, ForwardScratch& scratch) {
  const size_t heads = c.mla_num_heads, nope = c.qk_nope_head_dim, rope = c.qk_rope_head_dim;
  const size_t vdim = c.v_head_dim, ql = c.q_lora_rank, kvl = c.kv_lora_rank;
  const size_t qh_dim = nope + rope, kvb_rows = nope + vdim, stride = kvl + rope;

  // Attention per (token, head): independent items, split over slots of
  // threads. A row attends to at most its sequence's positions so far plus
  // the rows of this pass.
  const size_t items = n * heads;
  const size_t slots = slots_for(pool, items);
  size_t positions = 0;
  for (const LayerSegment& seg : segments)
    positions = std::max(positions, static_cast<size_t>(mla_cache_positions(c, seg.state->mla)) + seg.count);
  const MlaScratch m(c, n, positions, slots, scratch);

  // Queries: q = lin(rms(lin(x, q_a), q_a_layernorm, 1e-6), q_b).
  lin(w.q_a_proj, x, n, m.qa, pool);
  kernels::rms_norm(m.qa, n, ql, w.q_a_layernorm.data, kMlaLoraNormEps, m.qa);
  lin(w.q_b_proj, m.qa, n, m.q, pool);

  // Latents of the new positions go into each sequence's cache: [rms(c), k_r].
  // Row t belongs to sequence row_seg[t] and sits at its position row_pos[t].
  lin(w.kv_a_proj_with_mqa, x, n, m.ckv, pool);
  for (size_t si = 0; si < segments.size(); ++si) {
    MlaCache& cache = segments[si].state->mla;
    const size_t pos0 = static_cast<size_t>(mla_cache_positions(c, cache));
    cache.latent.resize((pos0 + segments[si].count) * stride);
    for (size_t r = 0; r < segments[si].count; ++r) {
      const size_t t = segments[si].begin + r;
      m.row_seg[t] = si;
      m.row_pos[t] = pos0 + r;
      float* dst = cache.latent.data() + (pos0 + r) * stride;
      kernels::rms_norm(m.ckv + t * stride, 1, kvl, w.kv_a_layernorm.data, kMlaLoraNormEps, dst);
      std::copy(m.ckv + t * stride + kvl, m.ckv + (t + 1) * stride, dst + kvl);
    }
  }

  if (c.mla_use_output_gate) lin(w.g_proj, x, n, m.gate, pool);

  const float scale = 1.0f / std::sqrt(static_cast<float>(qh_dim));
  if (attend_on_backend(c, w, segments, m, n, scale, pool)) {
    lin(w.o_proj, m.o, n, out, pool);
    return;
  }
  parallel_for_slots(pool, items, slots, [&](size_t slot, size_t i0, size_t i1) {
    float* q_lat = m.slots + slot * m.slot_floats;
    float* ctx = q_lat + ScratchCarver<float>::padded(kvl);
    float* scores = ctx + ScratchCarver<float>::padded(kvl);
    for (size_t item = i0; item < i1; ++item) {
      const size_t t = item / heads, h = item % heads;
      const MlaCache& cache = segments[m.row_seg[t]].state->mla;
      const float* qn = m.q + (t * heads + h) * qh_dim;
      const float* qr = qn + nope;
      const uint16_t* w_uk = w.kv_b_proj.data + h * kvb_rows * kvl;  // [nope, kvl]
      const uint16_t* w_uv = w_uk + nope * kvl;                      // [vdim, kvl]
      kernels::absorb_key_projection(w_uk, qn, nope, kvl, q_lat);
      // Causal: the row at position p sees its sequence's positions 0 .. p.
      const size_t npos = m.row_pos[t] + 1;
      kernels::latent_attention(q_lat, qr, cache.latent.data(), npos, stride, kvl, rope, scale, scores, ctx);
      // Expand through W_uv: o_h = W_uv ctx, then the sigmoid output gate.
      float* oh = m.o + (t * heads + h) * vdim;
      kernels::expand_value_projection(w_uv, ctx, vdim, kvl, oh);
      if (c.mla_use_output_gate)
        for (size_t d = 0; d < vdim; ++d) oh[d] *= kernels::sigmoid(m.gate[(t * heads + h) * vdim + d]);
    }
  });

  lin(w.o_proj, m.o, n, out, pool);
}

}  // namespace k3
