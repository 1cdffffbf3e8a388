#include "kernels/attention_scores.h"

#include <algorithm>
#include <cmath>

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
    scores[j] = std::exp(scores[j] - mx);
    sum += scores[j];
  }
  std::fill(ctx, ctx + kvl, 0.0f);
  for (size_t j = 0; j < npos; ++j) {
    const float p = scores[j] / sum;
    const float* lat = cache + j * stride;
    for (size_t r = 0; r < kvl; ++r) ctx[r] += p * lat[r];
  }
}

}  // namespace k3::kernels
