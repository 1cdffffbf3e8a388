#version 450
// KDA's short conv and silu (kernels/short_conv.cpp) with the CPU's
// roundings, one invocation per (channel c, row t):
//   acc = +0; acc += w[c, j] * x[t + j, c] for j = 0..K-1 (each product and
//   sum rounded on its own);  out = acc * (1 / (1 + exp_f32(-acc)))
// (kernels/activations.h's silu on k3's own exp_f32, shaders/exp_f32.glsl).
// Every step is emulated exactly (lavapipe flushes FP32 subnormals): the
// same on every device, and the same order on every CPU target (the kernel
// is scalar code).
#include "exact_f32_ops.glsl"
#include "exp_f32.glsl"

layout(local_size_x = 64) in;
// Unused (every step is emulated exactly); kept so the pipeline takes the
// specialization constant every shader here takes.
layout(constant_id = 0) const uint NATIVE_FMA = 0u;

layout(std430, binding = 0) readonly buffer Window { uint x[]; };  // FP32 bits [n + K - 1, channels]
layout(std430, binding = 1) readonly buffer Taps { uint w[]; };    // FP32 bits [channels, K], oldest first
layout(std430, binding = 2) writeonly buffer Out { uint y[]; };    // FP32 bits [n, channels]
layout(push_constant) uniform Shape {
  uint channels;
  uint taps;
  uint n;
};

void main() {
  const uint c = gl_GlobalInvocationID.x, t = gl_GlobalInvocationID.y;
  if (c >= channels || t >= n) return;
  uint acc = 0u;
  for (uint j = 0u; j < taps; ++j) acc = add_f32(acc, mul_f32(w[c * taps + j], x[(t + j) * channels + c]));
  const uint one = 0x3f800000u;
  const uint sigmoid = div_f32(one, add_f32(one, exp_f32(acc ^ 0x80000000u)));
  y[t * channels + c] = mul_f32(acc, sigmoid);
}
