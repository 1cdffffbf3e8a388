#include "model/decoder_layer.h"

#include <algorithm>

#include "kernels/attn_res.h"
#include "kernels/rms_norm.h"
#include "model/kda.h"
#include "model/latent_moe.h"
#include "model/linear.h"
#include "model/mla.h"
#include "model/prefill_chunk.h"
#include "model/situ_mlp.h"

namespace k3 {

namespace {

// h = mix(p, B, proj, res_norm) (p itself while B is empty), then
// x = rms(h, layernorm), over the stream's rows: at once where B is in
// memory, or a chunk's piece of rows at a time, h holding one piece (a row's
// mix and norm do not depend on the rows beside it: the bits are the same).
void mix_then_norm(const ModelConfig& c, ResidualStream& s, const uint16_t* proj, const float* res_norm,
                   const float* layernorm, ForwardScratch& scratch, ThreadPool* pool) {
  const size_t hidden = c.hidden_size, count = s.block_count();
  const size_t piece = s.chunk_blocks ? s.chunk_blocks->piece_rows() : s.n;
  const float eps = c.rms_norm_eps;
  float* h = scratch.h();
  for (size_t r0 = 0; r0 < s.n; r0 += piece) {
    const size_t m = std::min(piece, s.n - r0);
    const float* p = s.p + r0 * hidden;
    if (count == 0) std::copy_n(p, m * hidden, h);
    else if (s.chunk_blocks) s.chunk_blocks->mix(s.chunk_row0 + r0, m, count, p, proj, res_norm, eps, h, scratch.mix());
    else kernels::attn_res_mix_on_backend(s.blocks, p, m, hidden, proj, res_norm, eps, h, scratch.mix());
    kernels::rms_norm_on_backend(h, m, hidden, layernorm, eps, scratch.x() + r0 * hidden, pool);
  }
}

}  // namespace

void decoder_layer_attention(const ModelConfig& c, int i, const LayerWeights& w, WeightSource& source,
                             std::span<const LayerSegment> segments, ResidualStream& s,
                             const std::function<void()>& push_block, ForwardScratch& scratch, ThreadPool* pool) {
  const size_t n = s.n;
  float* x = scratch.x();
  float* a = scratch.a();

  // Attention on rms(h, input_layernorm), h = (B empty) ? p : mix(p, B,
  // self_attention_res_*).
  mix_then_norm(c, s, w.self_attention_res_proj.data, w.self_attention_res_norm.data, w.input_layernorm.data, scratch,
                pool);
  // A block boundary: the partial sum becomes a block state.
  if (i % c.attn_res_block_size == 0) {
    push_block();
    s.p_none = true;
  }
  if (!c.is_moe_layer(i)) latent_moe_guess_from_dense(c, i, source, x, n, pool, scratch);
  if (c.is_kda_layer(i)) kda_forward(c, w.kda, segments, x, n, a, pool, scratch);
  else mla_forward(c, w.mla, segments, x, n, a, pool, scratch);
  const size_t count = n * static_cast<size_t>(c.hidden_size);
  if (s.p_none) {
    std::copy_n(a, count, s.p);
    s.p_none = false;
  } else {
    for (size_t j = 0; j < count; ++j) s.p[j] += a[j];
  }

  // The FFN's input: rms(mix(p, B, mlp_res_*), post_attention_layernorm).
  mix_then_norm(c, s, w.mlp_res_proj.data, w.mlp_res_norm.data, w.post_attention_layernorm.data, scratch, pool);
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
