// LatentMoE: routed experts that live in a narrower latent space, plus
// shared experts on the layer input (SPEC section 2, "LatentMoE").
//
//   z   = lin(x, routed_expert_down_proj)                 hidden -> latent
//   y   = sum over chosen e of w_e * SiTU_MLP_e(z)         experts in the latent
//   y   = lin(rms(y, routed_expert_norm), routed_expert_up_proj)   (norm if latent_moe_use_norm)
//   out = y + SiTU_MLP_shared(x)
//
// For a batch, each chosen expert runs once over all the rows that chose it.
// Experts may arrive from the WeightSource in any order; each writes its own
// buffer and the per-token sum runs afterwards in ascending expert id (the
// one order of every path: model/expert_sum.h), so the result never depends
// on arrival order, batch size or thread count.
#pragma once

#include <cstddef>

#include "model/config.h"
#include "model/weight_source.h"

namespace k3 {

class ForwardScratch;
class ThreadPool;

// x[n, hidden] = rms(h, post_attention_layernorm) -> out[n, hidden].
// Temporaries live in `scratch`.
void latent_moe_forward(const ModelConfig& config, int layer, const MoeTrunkWeights& w, WeightSource& source,
                        const float* x, size_t n, float* out, ThreadPool* pool, ForwardScratch& scratch);

// --expert-lookahead: how many of each token's experts at a later MoE layer
// are guessed (the best of that layer's router on this layer's input), and
// how many MoE layers ahead are guessed (each layer guesses the next ones).
size_t latent_moe_guessed_per_token(const ModelConfig& config);
int latent_moe_lookahead_layers();

// --expert-lookahead at a layer without routed experts (the dense layers
// before the first MoE layer): the next layer's router applied to x, this
// layer's attention input, guesses its experts, so their reads overlap this
// layer's attention and MLP (the start of every pass, where no MoE layer
// came before to guess them). Only the source sees the guess.
void latent_moe_guess_from_dense(const ModelConfig& config, int layer, WeightSource& source, const float* x, size_t n,
                                 ThreadPool* pool, ForwardScratch& scratch);

// Scratch latent_moe_forward takes for n rows: floats, ints, indices (size_t).
size_t latent_moe_scratch_floats(const ModelConfig& config, size_t rows);
size_t latent_moe_scratch_ints(const ModelConfig& config, size_t rows);
size_t latent_moe_scratch_indices(const ModelConfig& config, size_t rows);

}  // namespace k3
