#version 450
// out[t, c] = x[t, c] * r_t * w[c], r_t = 1 / sqrt(float(sum_c x[t, c]^2 / dim) + eps)
// with kernels::rms_norm's roundings (kernels/rms_norm.cpp): the squares
// summed in double in index order, the mean rounded to double then to FP32,
// then FP32 add, sqrt, reciprocal and the two multiplies, each rounded once.
// One workgroup per row: invocation 0 sums (the order is one chain:
// sum_squares.glsl), all write the outputs.
#include "exact_f32_ops.glsl"

layout(local_size_x = 64) in;
// Unused (every step is emulated exactly); kept so the pipeline takes the
// specialization constant every shader here takes.
layout(constant_id = 0) const uint NATIVE_FMA = 0u;

layout(std430, binding = 0) readonly buffer Rows { uint x[]; };     // FP32 bits [n, dim]
layout(std430, binding = 1) readonly buffer Weight { uint w[]; };   // FP32 bits [dim]
layout(std430, binding = 2) writeonly buffer Out { uint y[]; };     // FP32 bits [n, dim]
layout(push_constant) uniform Shape {
  uint dim;
  uint n;
  uint eps;  // FP32 bits
};
#define SQUARES_ROW(i) x[i]
#include "sum_squares.glsl"

shared uint row_scale;

void main() {
  const uint t = gl_WorkGroupID.x, lid = gl_LocalInvocationID.x;
  const uint base = t * dim;
  if (lid == 0u) row_scale = rms_scale(base, dim, eps);
  barrier();
  const uint r = row_scale;
  for (uint c = lid; c < dim; c += 64u) y[base + c] = mul_f32(mul_f32(x[base + c], r), w[c]);
}
