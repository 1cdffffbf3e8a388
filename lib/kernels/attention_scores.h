// MLA's attention over the latent cache for one (token, head): scores of the
// absorbed query against every visible position, softmax, and the
// probability-weighted sum of the latents.
//
//   score[j] = (q_lat . c_j + q_rope . k_rope_j) * scale      j < npos
//   p = softmax(score);  ctx = sum_j p[j] * c_j
//
// Each cache row is [c (kvl floats), k_rope (rope floats)], `stride` apart.
// Plain loops in a fixed order (j, then r ascending), each multiply and add
// rounded on its own (no contraction: -ffp-contract=off) and e^x by
// exp_f32, not libm's, so the bits depend on neither the machine nor the
// thread count nor how tokens were batched, and a device can follow them
// (gpu/shaders/latent_attention.comp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace k3::kernels {

// `scores` is scratch of npos floats (holds the probabilities' numerators on
// return); `ctx` receives kvl floats.
void latent_attention(const float* q_lat, const float* q_rope, const float* cache, size_t npos, size_t stride,
                      size_t kvl, size_t rope, float scale, float* scores, float* ctx);

// The two halves of a head's kv_b_proj slice (BF16 rows of kvl) around
// latent_attention, for the model's MLA and the draft's block attention:
// the key half absorbed into the query, q_lat = W_uk^T q_nope (W_uk
// [nope, kvl]), and the value half expanding the context, out = W_uv ctx
// (W_uv [vdim, kvl]). Same fixed loop order as above.
void absorb_key_projection(const uint16_t* w_uk, const float* q_nope, size_t nope, size_t kvl, float* q_lat);
void expand_value_projection(const uint16_t* w_uv, const float* ctx, size_t vdim, size_t kvl, float* out);

}  // namespace k3::kernels
