// Scalar activation functions (sigmoid, silu, softplus), written once, on
// k3's own exp and log1p (exp_f32.h, log1p_f32.h) rather than libm's, which
// glibc picks among builds at load time: the bits are the same on every
// machine, and a compute device can follow them.
#pragma once

#include "kernels/exp_f32.h"
#include "kernels/log1p_f32.h"

namespace k3::kernels {

inline float sigmoid(float x) { return 1.0f / (1.0f + exp_f32(-x)); }
inline float silu(float x) { return x * sigmoid(x); }
inline float softplus(float x) { return x > 20.0f ? x : log1p_f32(exp_f32(x)); }

}  // namespace k3::kernels
