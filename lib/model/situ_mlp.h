// SiTU MLP (dense layer 0, shared experts, routed experts):
//   g = lin(x, W_gate), u = lin(x, W_up)
//   out = lin(situ(g, u), W_down)
// with the elementwise SiTU step of kernels/situ.h. It is not SwiGLU.
#pragma once

#include <cstddef>

#include "kernels/situ.h"
#include "model/config.h"
#include "model/weights.h"

namespace k3 {

class ThreadPool;

// The SiTU step's parameters, read from a config.
struct SituParams : kernels::SituParams {
  static SituParams from(const ModelConfig& c) { return {{c.situ_beta, c.has_situ_linear_beta, c.situ_linear_beta}}; }
};

// x[n, in] -> out[n, out]; weights: gate/up [inter, in], down [out, inter].
// `scratch` holds situ_scratch_floats(n, inter) floats (null: allocated here).
void situ_mlp(const DenseMlpWeights& w, const SituParams& p, const float* x, size_t n, float* out, ThreadPool* pool,
              float* scratch = nullptr);
void situ_mlp(const ExpertWeights& w, const SituParams& p, const float* x, size_t n, float* out, ThreadPool* pool,
              float* scratch = nullptr);

// Scratch of situ_mlp over n rows of width `inter`: g and u, [n, inter] each.
inline size_t situ_scratch_floats(size_t n, size_t inter) { return 2 * n * inter; }

}  // namespace k3
