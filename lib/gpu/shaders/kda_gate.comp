#version 450
// KDA's gates (model/kda.cpp's kda_gate with a lower bound, and beta), in
// place, one invocation per value of a token's row [g (heads x dim), beta
// (heads)]:
//   g = lb * sigmoid(exp_f32(A_log[h]) * (graw + dt_bias[h, d]))
//   beta = sigmoid(beta)
// sigmoid(y) = 1 / (1 + exp_f32(-y)) (kernels/activations.h, on k3's
// exp_f32: shaders/exp_f32.glsl), each add, multiply and division rounded
// once with integer operations (lavapipe flushes FP32 subnormals): the
// same bits on every device. Elementwise scalar code: no lane order.
#include "exact_f32_ops.glsl"
#include "exp_f32.glsl"

layout(local_size_x = 64) in;
// Unused (every step is emulated exactly); kept so the pipeline takes the
// specialization constant every shader here takes.
layout(constant_id = 0) const uint NATIVE_FMA = 0u;

// FP32 bits, per token: graw [heads, dim], then beta's raw values [heads];
// overwritten with g and beta.
layout(std430, binding = 0) buffer Rows { uint x[]; };
// FP32 bits: A_log [heads], then dt_bias [heads, dim].
layout(std430, binding = 1) readonly buffer Params { uint p[]; };
layout(push_constant) uniform Shape {
  uint heads;
  uint dim;
  uint tokens;
  uint lower_bound;  // FP32 bits: the gate's lower bound lb (negative)
};

uint sigmoid_f32(uint y) { return div_f32(0x3f800000u, add_f32(0x3f800000u, exp_f32(y ^ 0x80000000u))); }

void main() {
  const uint e = gl_GlobalInvocationID.x, t = gl_GlobalInvocationID.y;
  const uint hd = heads * dim, stride = hd + heads;
  if (e >= stride || t >= tokens) return;
  const uint at = t * stride + e;
  if (e >= hd) {
    x[at] = sigmoid_f32(x[at]);
    return;
  }
  const uint a = exp_f32(p[e / dim]);
  const uint v = add_f32(x[at], p[heads + e]);
  x[at] = mul_f32(lower_bound, sigmoid_f32(mul_f32(a, v)));
}
