#include "kernels/situ.h"

#include <cmath>

#include "kernels/activations.h"

namespace k3::kernels {

float situ(float g, float u, const SituParams& p) {
  const float a = p.beta * std::tanh(g / p.beta) * sigmoid(g);
  const float up = p.has_linear_beta ? p.linear_beta * std::tanh(u / p.linear_beta) : u;
  return a * up;
}

}  // namespace k3::kernels
