// The SiTU step: SiTU MLP's elementwise part (model/situ_mlp.h is the layer
// around it: gate and up products in, the down product out).
//   a = beta * tanh(g / beta) * sigmoid(g)
//   u' = lbeta * tanh(u / lbeta)          (u' = u when the config has no lbeta)
//   situ(g, u) = a * u'
// It is not SwiGLU. Scalar code only (no Highway version to check against).
#pragma once

namespace k3::kernels {

struct SituParams {
  float beta = 4.0f;
  bool has_linear_beta = true;
  float linear_beta = 25.0f;
};

float situ(float g, float u, const SituParams& p);

}  // namespace k3::kernels
