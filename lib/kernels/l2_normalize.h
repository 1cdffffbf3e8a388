// l2normalize(x) = x / sqrt(sum(x^2) + 1e-6) (flash-linear-attention's form:
// the epsilon sits inside the square root), times `scale`: KDA's query and
// key normalisation. Inline: the forward pass calls it per head and token.
#pragma once

#include <cmath>
#include <cstddef>

namespace k3::kernels {

// The sum of squares is taken in double in index order, so the result
// depends on nothing but x.
inline void l2_normalize(float* x, size_t D, float scale) {
  double ss = 0;
  for (size_t d = 0; d < D; ++d) ss += static_cast<double>(x[d]) * x[d];
  const float inv = 1.0f / std::sqrt(static_cast<float>(ss) + 1e-6f);
  for (size_t d = 0; d < D; ++d) x[d] = x[d] * inv * scale;
}

}  // namespace k3::kernels
