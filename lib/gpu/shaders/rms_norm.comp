#version 450
// out[t, c] = x[t, c] * r_t * w[c], r_t = 1 / sqrt(float(sum_c x[t, c]^2 / dim) + eps)
// with kernels::rms_norm's roundings (kernels/rms_norm.cpp): the squares
// summed in double in index order, the mean rounded to double then to FP32,
// then FP32 add, sqrt, reciprocal and the two multiplies, each rounded once.
// One workgroup per row: invocation 0 sums (the order is one chain), all
// write the outputs.
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

shared uint row_scale;

void main() {
  const uint t = gl_WorkGroupID.x, lid = gl_LocalInvocationID.x;
  const uint base = t * dim;
  if (lid == 0u) {
    precise double ss = 0.0;
    for (uint c = 0u; c < dim; ++c) {
      precise double v = f32_bits_to_f64(x[base + c]);
      precise double sq = v * v;  // exact: 48 bits
      ss = ss + sq;
    }
    const uint mean = f64_to_f32_bits(div_f64_by_uint(ss, dim));
    row_scale = recip_f32(sqrt_f32(add_exact(mean, eps)));
  }
  barrier();
  const uint r = row_scale;
  for (uint c = lid; c < dim; c += 64u) y[base + c] = mul_f32(mul_f32(x[base + c], r), w[c]);
}
