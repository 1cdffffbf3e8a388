// Scalar activation functions (sigmoid, silu, softplus), written once.
#pragma once

#include <cmath>

namespace k3::kernels {

inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
inline float silu(float x) { return x * sigmoid(x); }
inline float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

}  // namespace k3::kernels
