#version 450
// KDA's gates (model/kda.cpp's kda_gate, and beta), in place, one
// invocation per value of a token's row [g (heads x dim), beta (heads)]:
//   a = exp_f32(A_log[h]), v = graw + dt_bias[h, d]
//   g = lb * sigmoid(a * v) with a lower bound lb, else -a * softplus(v)
//   beta = sigmoid(beta)
// sigmoid(y) = 1 / (1 + exp_f32(-y)), softplus(v) = v > 20 ? v :
// log1p_f32(exp_f32(v)) (kernels/activations.h, on k3's exp_f32 and
// log1p_f32: shaders/exp_f32.glsl, log1p_f32.glsl), each add, multiply and division rounded
// once with integer operations (lavapipe flushes FP32 subnormals): the
// same bits on every device. Elementwise scalar code: no lane order.
#include "exact_f32_ops.glsl"
#include "exp_f32.glsl"
#include "log1p_f32.glsl"

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
  uint has_lower_bound;  // 1: the lower-bound form; 0: the softplus form
  uint lower_bound;      // FP32 bits: the gate's lower bound lb (negative)
};

uint sigmoid_f32(uint y) { return div_f32(kOne, add_f32(kOne, exp_f32(y ^ 0x80000000u))); }
uint softplus_f32(uint v) { return gt_f32(v, 0x41a00000u) ? v : log1p_f32(exp_f32(v)); }  // 20

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
  if (has_lower_bound != 0u) x[at] = mul_f32(lower_bound, sigmoid_f32(mul_f32(a, v)));
  else x[at] = mul_f32(a ^ 0x80000000u, softplus_f32(v));
}
