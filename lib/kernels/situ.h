// The SiTU step: SiTU MLP's elementwise part (model/situ_mlp.h is the layer
// around it: gate and up products in, the down product out).
//   a = beta * tanh(g / beta) * sigmoid(g)
//   u' = lbeta * tanh(u / lbeta)          (u' = u when the config has no lbeta)
//   situ(g, u) = a * u'
// It is not SwiGLU.
#pragma once

#include <cstddef>

namespace k3 {
class ThreadPool;
}

namespace k3::kernels {

struct SituParams {
  float beta = 4.0f;
  bool has_linear_beta = true;
  float linear_beta = 25.0f;
};

float situ(float g, float u, const SituParams& p);

// g[i] = situ(g[i], u[i]) for i < count, split over `pool` (inline when
// null). Each element is computed once by the same code whatever the split,
// so the result does not depend on the thread count.
void situ_inplace(float* g, const float* u, size_t count, const SituParams& p, ThreadPool* pool);

}  // namespace k3::kernels
