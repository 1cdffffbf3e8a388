// SiTU MLP (dense layer 0, shared experts, routed experts):
//   g = lin(x, W_gate), u = lin(x, W_up)
//   a = beta * tanh(g / beta) * sigmoid(g)
//   u' = lbeta * tanh(u / lbeta)          (u' = u when the config has no lbeta)
//   out = lin(a * u', W_down)
// It is not SwiGLU.
#pragma once

#include <cstddef>

#include "model/config.h"
#include "model/weights.h"

namespace k3 {

class ThreadPool;

struct SituParams {
  float beta = 4.0f;
  bool has_linear_beta = true;
  float linear_beta = 25.0f;
  static SituParams from(const ModelConfig& c) { return {c.situ_beta, c.has_situ_linear_beta, c.situ_linear_beta}; }
};

// The elementwise part: a(g) * u'(u).
float situ(float g, float u, const SituParams& p);

// x[n, in] -> out[n, out]; weights: gate/up [inter, in], down [out, inter].
void situ_mlp(const DenseMlpWeights& w, const SituParams& p, const float* x, size_t n, float* out, ThreadPool* pool);
void situ_mlp(const ExpertWeights& w, const SituParams& p, const float* x, size_t n, float* out, ThreadPool* pool);

}  // namespace k3
