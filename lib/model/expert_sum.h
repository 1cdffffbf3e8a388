// The one order in which a token's routed-expert outputs are summed, on
// every path (the per-batch latent_moe_forward and the layer-major chunk's
// moe_chunk_experts): the token's latent sum starts at zero and each chosen
// expert's weighted output is added **in ascending expert id**, one
// add_expert_output call per expert. Floating-point sums depend on their
// order, so every path must add in exactly this order for the chunk and the
// batch to give the same bits.
//
// Ascending id rather than the router's best-first order: the chunk adds an
// expert's output into its tokens' sums right after that expert's group of
// experts has run (latent_moe_chunk.h), so it keeps one latent row per token
// instead of all k of them; experts run in ascending id, so that is the
// order a token's outputs become ready in. The order never depends on the
// order a WeightSource delivers experts in, the cache's state, the budget,
// the sub-batch or the chunk size.
#pragma once

#include <cstddef>

namespace k3 {

// y[0, latent) += weight * out[0, latent): one expert's share of a token.
inline void add_expert_output(float* y, float weight, const float* out, size_t latent) {
  for (size_t d = 0; d < latent; ++d) y[d] += weight * out[d];
}

}  // namespace k3
