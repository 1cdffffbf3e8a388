#include "kernels/attention_scores.h"

#include <algorithm>
#include <cmath>

#include "kernels/bf16.h"
#include "kernels/exp_f32.h"

namespace k3::kernels {

void latent_attention(const float* q_lat, const float* q_rope, const float* cache, size_t npos, size_t stride,
                      size_t kvl, size_t rope, float scale, float* scores, float* ctx) {
  float mx = -INFINITY;
  for (size_t j = 0; j < npos; ++j) {
    const float* lat = cache + j * stride;
    float s = 0;
    for (size_t r = 0; r < kvl; ++r) s += q_lat[r] * lat[r];
    float sr = 0;
    for (size_t r = 0; r < rope; ++r) sr += q_rope[r] * lat[kvl + r];
    scores[j] = (s + sr) * scale;
    mx = std::max(mx, scores[j]);
  }
  float sum = 0;
  for (size_t j = 0; j < npos; ++j) {
    scores[j] = exp_f32(scores[j] - mx);
    sum += scores[j];
  }
  std::fill(ctx, ctx + kvl, 0.0f);
  for (size_t j = 0; j < npos; ++j) {
    const float p = scores[j] / sum;
    const float* lat = cache + j * stride;
    for (size_t r = 0; r < kvl; ++r) ctx[r] += p * lat[r];
  }
}

void absorb_key_projection(const uint16_t* w_uk, const float* q_nope, size_t nope, size_t kvl, float* q_lat) {
  std::fill(q_lat, q_lat + kvl, 0.0f);
  for (size_t d = 0; d < nope; ++d) {
    const uint16_t* row = w_uk + d * kvl;
    for (size_t r = 0; r < kvl; ++r) q_lat[r] += bf16_to_f32(row[r]) * q_nope[d];
  }
}

void expand_value_projection(const uint16_t* w_uv, const float* ctx, size_t vdim, size_t kvl, float* out) {
  for (size_t d = 0; d < vdim; ++d) {
    const uint16_t* row = w_uv + d * kvl;
    float acc = 0;
    for (size_t r = 0; r < kvl; ++r) acc += bf16_to_f32(row[r]) * ctx[r];
    out[d] = acc;
  }
}

}  // namespace k3::kernels
