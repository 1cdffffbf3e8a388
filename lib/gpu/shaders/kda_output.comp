#version 450
// The KDA layer's output before o_proj (model/kda.cpp's finish_output), in
// place, one row per (token, head): o = rms_norm(o, o_norm, eps) *
// sigmoid(gate), each step with the CPU's roundings:
//   r = kernels::rms_scale(o)  (sum_squares.glsl: squares summed in double
//       in index order, the one order of the scalar CPU kernel on every
//       target);
//   o[d] = ((o[d] * r) * o_norm[d]) * (1 / (1 + exp_f32(-gate[d])))
// (kernels/activations.h's sigmoid on k3's exp_f32, shaders/exp_f32.glsl),
// every multiply, add, division and the square root rounded once with
// integer operations (lavapipe flushes FP32 subnormals): the same bits on
// every device.
#include "exact_f32_ops.glsl"
#include "exp_f32.glsl"

layout(local_size_x = 64) in;
// Unused (every step is emulated exactly); kept so the pipeline takes the
// specialization constant every shader here takes.
layout(constant_id = 0) const uint NATIVE_FMA = 0u;

// FP32 bits: o [rows, dim] (overwritten with the result), then the gate's
// raw values [rows, dim].
layout(std430, binding = 0) buffer Rows { uint x[]; };
layout(std430, binding = 1) readonly buffer Weight { uint w[]; };  // FP32 bits of o_norm [dim]
layout(push_constant) uniform Shape {
  uint dim;
  uint rows;
  uint eps;  // FP32 bits
};
#define SQUARES_ROW(i) x[i]
#include "sum_squares.glsl"

shared uint row_scale;

void main() {
  const uint t = gl_WorkGroupID.x, lid = gl_LocalInvocationID.x;
  const uint base = t * dim, gates = rows * dim;
  // Invocation 0 reads the whole row before any invocation writes it.
  if (lid == 0u) row_scale = rms_scale(base, dim, eps);
  barrier();
  const uint r = row_scale, one = 0x3f800000u;
  for (uint c = lid; c < dim; c += 64u) {
    const uint normed = mul_f32(mul_f32(x[base + c], r), w[c]);
    const uint sigmoid = div_f32(one, add_f32(one, exp_f32(x[gates + base + c] ^ 0x80000000u)));
    x[base + c] = mul_f32(normed, sigmoid);
  }
}
