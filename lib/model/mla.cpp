#include "model/mla.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/error.h"
#include "kernels/activations.h"
#include "kernels/attention_scores.h"
#include "kernels/bf16.h"
#include "kernels/thread_pool.h"
#include "model/linear.h"
#include "model/rms_norm.h"

namespace k3 {

int64_t mla_cache_positions(const ModelConfig& c, const MlaCache& cache) {
  return static_cast<int64_t>(cache.latent.size() / static_cast<size_t>(c.kv_lora_rank + c.qk_rope_head_dim));
}

void mla_truncate(const ModelConfig& c, MlaCache& cache, int64_t positions) {
  const size_t stride = static_cast<size_t>(c.kv_lora_rank + c.qk_rope_head_dim);
  if (positions < 0 || positions > mla_cache_positions(c, cache))
    throw Error(ExitCode::kInternal, "MLA truncation past the cached positions");
  cache.latent.resize(static_cast<size_t>(positions) * stride);
}

void mla_forward(const ModelConfig& c, const MlaWeights& w, MlaCache& cache, const float* x, size_t n, float* out,
                 ThreadPool* pool) {
  LayerState holder;
  holder.mla = std::move(cache);
  const LayerSegment one{&holder, 0, n, nullptr};
  mla_forward(c, w, std::span<const LayerSegment>(&one, 1), x, n, out, pool);
  cache = std::move(holder.mla);
}

void mla_forward(const ModelConfig& c, const MlaWeights& w, std::span<const LayerSegment> segments, const float* x,
                 size_t n, float* out, ThreadPool* pool) {
  const size_t heads = c.mla_num_heads, nope = c.qk_nope_head_dim, rope = c.qk_rope_head_dim;
  const size_t vdim = c.v_head_dim, ql = c.q_lora_rank, kvl = c.kv_lora_rank;
  const size_t qh_dim = nope + rope, kvb_rows = nope + vdim, stride = kvl + rope;

  // Queries: q = lin(rms(lin(x, q_a), q_a_layernorm, 1e-6), q_b).
  std::vector<float> qa(n * ql), q(n * heads * qh_dim);
  lin(w.q_a_proj, x, n, qa.data(), pool);
  rms_norm(qa.data(), n, ql, w.q_a_layernorm.data, kMlaLoraNormEps, qa.data());
  lin(w.q_b_proj, qa.data(), n, q.data(), pool);

  // Latents of the new positions go into each sequence's cache: [rms(c), k_r].
  // Row t belongs to sequence row_seg[t] and sits at its position row_pos[t].
  std::vector<float> ckv(n * stride);
  lin(w.kv_a_proj_with_mqa, x, n, ckv.data(), pool);
  std::vector<size_t> row_seg(n), row_pos(n);
  for (size_t si = 0; si < segments.size(); ++si) {
    MlaCache& cache = segments[si].state->mla;
    const size_t pos0 = static_cast<size_t>(mla_cache_positions(c, cache));
    cache.latent.resize((pos0 + segments[si].count) * stride);
    for (size_t r = 0; r < segments[si].count; ++r) {
      const size_t t = segments[si].begin + r;
      row_seg[t] = si;
      row_pos[t] = pos0 + r;
      float* dst = cache.latent.data() + (pos0 + r) * stride;
      rms_norm(ckv.data() + t * stride, 1, kvl, w.kv_a_layernorm.data, kMlaLoraNormEps, dst);
      std::copy(ckv.data() + t * stride + kvl, ckv.data() + (t + 1) * stride, dst + kvl);
    }
  }

  std::vector<float> gate;
  if (c.mla_use_output_gate) {
    gate.resize(n * heads * vdim);
    lin(w.g_proj, x, n, gate.data(), pool);
  }

  // Attention per (token, head): independent items, each in a fixed order.
  const float scale = 1.0f / std::sqrt(static_cast<float>(qh_dim));
  std::vector<float> o(n * heads * vdim);
  auto run = [&](size_t i0, size_t i1) {
    std::vector<float> q_lat(kvl), ctx(kvl), scores;
    for (size_t item = i0; item < i1; ++item) {
      const size_t t = item / heads, h = item % heads;
      const MlaCache& cache = segments[row_seg[t]].state->mla;
      const float* qn = q.data() + (t * heads + h) * qh_dim;
      const float* qr = qn + nope;
      const uint16_t* w_uk = w.kv_b_proj.data + h * kvb_rows * kvl;  // [nope, kvl]
      const uint16_t* w_uv = w_uk + nope * kvl;                       // [vdim, kvl]
      // Absorb W_uk into the query: q_lat = W_uk^T q_nope.
      std::fill(q_lat.begin(), q_lat.end(), 0.0f);
      for (size_t d = 0; d < nope; ++d) {
        const uint16_t* row = w_uk + d * kvl;
        for (size_t r = 0; r < kvl; ++r) q_lat[r] += kernels::bf16_to_f32(row[r]) * qn[d];
      }
      // Causal: the row at position p sees its sequence's positions 0 .. p.
      const size_t npos = row_pos[t] + 1;
      scores.resize(npos);
      kernels::latent_attention(q_lat.data(), qr, cache.latent.data(), npos, stride, kvl, rope, scale, scores.data(),
                                ctx.data());
      // Expand through W_uv: o_h = W_uv ctx, then the sigmoid output gate.
      float* oh = o.data() + (t * heads + h) * vdim;
      for (size_t d = 0; d < vdim; ++d) {
        const uint16_t* row = w_uv + d * kvl;
        float acc = 0;
        for (size_t r = 0; r < kvl; ++r) acc += kernels::bf16_to_f32(row[r]) * ctx[r];
        oh[d] = c.mla_use_output_gate ? acc * sigmoid(gate[(t * heads + h) * vdim + d]) : acc;
      }
    }
  };
  if (pool)
    pool->parallel_for(n * heads, 1, run);
  else
    run(0, n * heads);

  lin(w.o_proj, o.data(), n, out, pool);
}

}  // namespace k3
