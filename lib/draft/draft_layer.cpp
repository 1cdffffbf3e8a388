#include "draft/draft_layer.h"

#include <algorithm>

#include "common/thread_pool.h"
#include "kernels/activations.h"
#include "kernels/attention_scores.h"
#include "kernels/bf16.h"
#include "kernels/rms_norm.h"
#include "model/linear.h"

namespace k3 {

using kernels::rms_norm;
using kernels::silu;

namespace {

// Attention of the block rows: u[n][hidden] (normed) -> out[n][hidden].
void block_attention(const DSparkConfig& c, const DraftLayerWeights& w, const YarnRope& rope, std::vector<float>& cache,
                     int64_t context_len, const float* u, size_t n, float* out, ThreadPool* pool) {
  const size_t heads = c.num_heads, nope = c.qk_nope_head_dim, rdim = c.qk_rope_head_dim, vdim = c.v_head_dim;
  const size_t ql = c.q_lora_rank, kvl = c.kv_lora_rank, stride = c.kv_stride(), qh = nope + rdim;
  const size_t L = static_cast<size_t>(context_len), npos = L + n, kvb_rows = nope + vdim;
  std::vector<float> qa(n * ql), q(n * heads * qh), kv(n * stride), o(n * heads * vdim);
  lin(w.q_a_proj, u, n, qa.data(), pool);
  rms_norm(qa.data(), n, ql, w.q_a_layernorm.data(), c.rms_norm_eps, qa.data());
  lin(w.q_b_proj, qa.data(), n, q.data(), pool);
  for (size_t t = 0; t < n; ++t)
    for (size_t h = 0; h < heads; ++h) rope.rotate(q.data() + (t * heads + h) * qh + nope, context_len + t);
  // The block's keys, after the context's, for this pass only.
  lin(w.kv_a_proj_with_mqa, u, n, kv.data(), pool);
  cache.resize(npos * stride);
  for (size_t t = 0; t < n; ++t) {
    float* dst = cache.data() + (L + t) * stride;
    rms_norm(kv.data() + t * stride, 1, kvl, w.kv_a_layernorm.data(), c.rms_norm_eps, dst);
    std::copy(kv.data() + t * stride + kvl, kv.data() + (t + 1) * stride, dst + kvl);
    rope.rotate(dst + kvl, context_len + t);
  }
  const size_t items = n * heads;
  const size_t slots = slots_for(pool, items);
  std::vector<float> slot_buf(slots * (2 * kvl + npos));
  const float scale = rope.softmax_scale();
  parallel_for_slots(pool, items, slots, [&](size_t slot, size_t i0, size_t i1) {
    float* q_lat = slot_buf.data() + slot * (2 * kvl + npos);
    float* ctx = q_lat + kvl;
    float* scores = ctx + kvl;
    for (size_t item = i0; item < i1; ++item) {
      const size_t t = item / heads, h = item % heads;
      const float* qn = q.data() + (t * heads + h) * qh;
      const uint16_t* w_uk = w.kv_b_proj.data + h * kvb_rows * kvl;  // [nope, kvl]
      const uint16_t* w_uv = w_uk + nope * kvl;                      // [vdim, kvl]
      kernels::absorb_key_projection(w_uk, qn, nope, kvl, q_lat);
      // Non-causal: every block row sees the whole context and all n rows.
      kernels::latent_attention(q_lat, qn + nope, cache.data(), npos, stride, kvl, rdim, scale, scores, ctx);
      kernels::expand_value_projection(w_uv, ctx, vdim, kvl, o.data() + (t * heads + h) * vdim);
    }
  });
  cache.resize(L * stride);  // the block's latents are never committed
  lin(w.o_proj, o.data(), n, out, pool);
}

}  // namespace

void draft_layer_forward(const DSparkConfig& c, const DraftLayerWeights& w, const YarnRope& rope,
                         std::vector<float>& cache, int64_t context_len, float* h, size_t n, ThreadPool* pool) {
  const size_t H = c.hidden_size, I = c.intermediate_size;
  std::vector<float> u(n * H), out(n * H), g(n * I), up(n * I);
  rms_norm(h, n, H, w.input_layernorm.data(), c.rms_norm_eps, u.data());
  block_attention(c, w, rope, cache, context_len, u.data(), n, out.data(), pool);
  for (size_t j = 0; j < n * H; ++j) h[j] += out[j];
  rms_norm(h, n, H, w.post_attention_layernorm.data(), c.rms_norm_eps, u.data());
  lin(w.gate_proj, u.data(), n, g.data(), pool);
  lin(w.up_proj, u.data(), n, up.data(), pool);
  for (size_t j = 0; j < n * I; ++j) g[j] = silu(g[j]) * up[j];
  lin(w.down_proj, g.data(), n, out.data(), pool);
  for (size_t j = 0; j < n * H; ++j) h[j] += out[j];
}

}  // namespace k3
