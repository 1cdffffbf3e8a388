#include "model/decoder_layer.h"

#include "model/attn_res.h"
#include "model/kda.h"
#include "model/latent_moe.h"
#include "model/mla.h"
#include "model/rms_norm.h"
#include "model/situ_mlp.h"

namespace k3 {

std::vector<const float*> ResidualStream::block_ptrs() const {
  std::vector<const float*> out;
  for (const auto& b : blocks) out.push_back(b.data());
  return out;
}

void decoder_layer_forward(const ModelConfig& c, int i, const LayerWeights& w, WeightSource& source,
                           LayerState& state, ResidualStream& s, ThreadPool* pool) {
  const LayerSegment one{&state, 0, s.n, nullptr};
  decoder_layer_forward(c, i, w, source, std::span<const LayerSegment>(&one, 1), s, pool);
}

void decoder_layer_forward(const ModelConfig& c, int i, const LayerWeights& w, WeightSource& source,
                           std::span<const LayerSegment> segments, ResidualStream& s, ThreadPool* pool) {
  const size_t n = s.n, hidden = c.hidden_size;
  const float eps = c.rms_norm_eps;
  std::vector<float> h(n * hidden), x(n * hidden), a(n * hidden);

  // h = (B empty) ? p : mix(p, B, self_attention_res_*)
  if (s.blocks.empty())
    h = s.p;
  else
    attn_res_mix(s.block_ptrs(), s.p.data(), n, hidden, w.self_attention_res_proj, w.self_attention_res_norm, eps,
                 h.data());
  // A block boundary: the partial sum becomes a block state.
  if (i % c.attn_res_block_size == 0) {
    s.blocks.push_back(s.p);
    s.p_none = true;
  }

  // Attention on rms(h, input_layernorm).
  rms_norm(h.data(), n, hidden, w.input_layernorm.data, eps, x.data());
  if (c.is_kda_layer(i))
    kda_forward(c, w.kda, segments, x.data(), n, a.data(), pool);
  else
    mla_forward(c, w.mla, segments, x.data(), n, a.data(), pool);
  if (s.p_none) {
    s.p = a;
    s.p_none = false;
  } else {
    for (size_t j = 0; j < n * hidden; ++j) s.p[j] += a[j];
  }

  // FFN on rms(mix(p, B, mlp_res_*), post_attention_layernorm).
  attn_res_mix(s.block_ptrs(), s.p.data(), n, hidden, w.mlp_res_proj, w.mlp_res_norm, eps, h.data());
  rms_norm(h.data(), n, hidden, w.post_attention_layernorm.data, eps, x.data());
  if (c.is_moe_layer(i))
    latent_moe_forward(c, i, w.moe, source, x.data(), n, a.data(), pool);
  else
    situ_mlp(w.mlp, SituParams::from(c), x.data(), n, a.data(), pool);
  for (size_t j = 0; j < n * hidden; ++j) s.p[j] += a[j];
}

}  // namespace k3
