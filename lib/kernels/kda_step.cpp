#include "kernels/kda_step.h"

#include <cmath>

namespace k3::kernels {

void kda_recurrent_step(float* S, const float* q, const float* k, const float* v, const float* g, float beta, size_t D,
                        float* o, float* u) {
  // Decay each key row, then the delta rule: u = v - S^T k.
  for (size_t i = 0; i < D; ++i) {
    const float decay = std::exp(g[i]);
    float* row = S + i * D;
    for (size_t j = 0; j < D; ++j) row[j] *= decay;
  }
  for (size_t j = 0; j < D; ++j) u[j] = v[j];
  for (size_t i = 0; i < D; ++i) {
    const float* row = S + i * D;
    for (size_t j = 0; j < D; ++j) u[j] -= row[j] * k[i];
  }
  for (size_t i = 0; i < D; ++i) {
    const float bk = beta * k[i];
    float* row = S + i * D;
    for (size_t j = 0; j < D; ++j) row[j] += bk * u[j];
  }
  for (size_t j = 0; j < D; ++j) o[j] = 0;
  for (size_t i = 0; i < D; ++i) {
    const float* row = S + i * D;
    for (size_t j = 0; j < D; ++j) o[j] += row[j] * q[i];
  }
}

}  // namespace k3::kernels
