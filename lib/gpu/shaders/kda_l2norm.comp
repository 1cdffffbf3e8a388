#version 450
// KDA's q and k normalisation (kernels/l2_normalize.h), in place, one row
// per (token, head): x = (x * inv) * scale, inv = 1 / sqrt(float(ss) + 1e-6),
// ss the squares summed in double in index order (sum_squares.glsl: the
// scalar CPU kernel's one order on every target), rounded once to FP32,
// then FP32 add, square root, division and the two multiplies each rounded
// once with integer operations (lavapipe flushes FP32 subnormals): the same
// bits on every device.
#include "exact_f32_ops.glsl"

layout(local_size_x = 64) in;
// Unused (every step is emulated exactly); kept so the pipeline takes the
// specialization constant every shader here takes.
layout(constant_id = 0) const uint NATIVE_FMA = 0u;

layout(std430, binding = 0) buffer Rows { uint x[]; };  // FP32 bits [rows, dim], normalised in place
layout(push_constant) uniform Shape {
  uint dim;
  uint rows;
  uint scale;  // FP32 bits: 1/sqrt(D) for q, 1 for k
};
#define SQUARES_ROW(i) x[i]
#include "sum_squares.glsl"

// The kernel's epsilon, 1e-6f, inside the square root.
const uint kL2Epsilon = 0x358637bdu;

shared uint row_inv;

void main() {
  const uint t = gl_WorkGroupID.x, lid = gl_LocalInvocationID.x;
  const uint base = t * dim;
  // Invocation 0 reads the whole row before any invocation writes it.
  if (lid == 0u) {
    const uint ss = f64_to_f32_bits(sum_squares(base, dim));
    row_inv = div_f32(0x3f800000u, sqrt_f32(add_f32(ss, kL2Epsilon)));
  }
  barrier();
  const uint inv = row_inv;
  for (uint c = lid; c < dim; c += 64u) x[base + c] = mul_f32(mul_f32(x[base + c], inv), scale);
}
