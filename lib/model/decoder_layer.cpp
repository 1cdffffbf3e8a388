#include "model/decoder_layer.h"

#include <algorithm>

#include "kernels/attn_res.h"
#include "kernels/rms_norm.h"
#include "model/kda.h"
#include "model/latent_moe.h"
#include "model/linear.h"
#include "model/mla.h"
#include "model/situ_mlp.h"

namespace k3 {

void decoder_layer_attention(const ModelConfig& c, int i, const LayerWeights& w, WeightSource& source,
                             std::span<const LayerSegment> segments, ResidualStream& s,
                             const std::function<void()>& push_block, ForwardScratch& scratch, ThreadPool* pool) {
  const size_t n = s.n, hidden = c.hidden_size;
  const float eps = c.rms_norm_eps;
  float* h = scratch.h();
  float* x = scratch.x();
  float* a = scratch.a();

  // h = (B empty) ? p : mix(p, B, self_attention_res_*)
  if (s.blocks.empty()) std::copy_n(s.p, n * hidden, h);
  else
    kernels::attn_res_mix_on_backend(s.blocks, s.p, n, hidden, w.self_attention_res_proj.data,
                                     w.self_attention_res_norm.data, eps, h, scratch.mix());
  // A block boundary: the partial sum becomes a block state.
  if (i % c.attn_res_block_size == 0) {
    push_block();
    s.p_none = true;
  }

  // Attention on rms(h, input_layernorm).
  kernels::rms_norm_on_backend(h, n, hidden, w.input_layernorm.data, eps, x, pool);
  if (!c.is_moe_layer(i)) latent_moe_guess_from_dense(c, i, source, x, n, pool, scratch);
  if (c.is_kda_layer(i)) kda_forward(c, w.kda, segments, x, n, a, pool, scratch);
  else mla_forward(c, w.mla, segments, x, n, a, pool, scratch);
  if (s.p_none) {
    std::copy_n(a, n * hidden, s.p);
    s.p_none = false;
  } else {
    for (size_t j = 0; j < n * hidden; ++j) s.p[j] += a[j];
  }

  // The FFN's input: rms(mix(p, B, mlp_res_*), post_attention_layernorm).
  kernels::attn_res_mix_on_backend(s.blocks, s.p, n, hidden, w.mlp_res_proj.data, w.mlp_res_norm.data, eps, h,
                                   scratch.mix());
  kernels::rms_norm_on_backend(h, n, hidden, w.post_attention_layernorm.data, eps, x, pool);
}

void decoder_layer_add(const ModelConfig& c, ResidualStream& s, const float* out) {
  const size_t count = s.n * static_cast<size_t>(c.hidden_size);
  for (size_t j = 0; j < count; ++j) s.p[j] += out[j];
}

void decoder_layer_forward(const ModelConfig& c, int i, const LayerWeights& w, WeightSource& source,
                           std::span<const LayerSegment> segments, ForwardScratch& scratch, ThreadPool* pool) {
  ResidualStream& s = scratch.stream();
  decoder_layer_attention(
      c, i, w, source, segments, s, [&] { scratch.push_block(c); }, scratch, pool);
  const size_t n = s.n;
  const float* x = scratch.x();
  float* a = scratch.a();
  if (c.is_moe_layer(i)) {
    latent_moe_forward(c, i, w.moe, source, x, n, a, pool, scratch);
  } else {
    const size_t inter = out_dim(w.mlp.gate_proj);
    situ_mlp(w.mlp, SituParams::from(c), x, n, a, pool, scratch.op_floats(situ_scratch_floats(n, inter)));
  }
  decoder_layer_add(c, s, a);
}

}  // namespace k3
