// One DSpark draft layer over the query block (docs/dspark.md):
//   h += o_proj(MLA(rms(h, input_layernorm)))   keys: the context ++ the block,
//                                                 non-causal (every block row
//                                                 sees every other)
//   h += down(silu(gate v) * up v),  v = rms(h, post_attention_layernorm)
// MLA with q-LoRA, YaRN rope on the query's and the key's rope dims, every
// norm with rms_norm_eps, no output gate; computed on the latent (kv_b
// absorbed into the query and the output, as K3's own MLA does), which is
// the same sum in another order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "draft/dspark_config.h"
#include "draft/dspark_weights.h"
#include "draft/yarn_rope.h"

namespace k3 {

class ThreadPool;

// Runs layer `w` over the n block rows h[n][hidden] at positions
// context_len .. +n-1. `cache` is this layer's context cache
// ([context_len][kv_lora + rope]); the block's own latents are appended for
// the pass and removed again, so the cache is unchanged on return.
void draft_layer_forward(const DSparkConfig& config, const DraftLayerWeights& w, const YarnRope& rope,
                         std::vector<float>& cache, int64_t context_len, float* h, size_t n, ThreadPool* pool);

}  // namespace k3
