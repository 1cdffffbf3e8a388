#version 450
// The KDA recurrence of kernels/kda_step.cpp over one sequence's tokens, one
// invocation per (value index j, head h): column j of a head's S depends on
// nothing but itself, so each invocation carries it through every token in
// turn. Per token, as the CPU step does, each multiply and add rounded on
// its own, every sum over the key index i = 0..D-1 in turn:
//   S[i][j] *= decay[i];  u = v[j] - sum_i S[i][j] * k[i];
//   S[i][j] += (beta * k[i]) * u;  o[j] = +0 + sum_i S[i][j] * q[i].
// decay = exp(g) is computed by the host with the CPU kernel's kernels::exp_f32.
// Without NATIVE_FMA (the device's arithmetic may flush subnormals, as
// lavapipe's does) each operation is emulated: a product of two FP32 values
// is exact in double and rounded once, a sum through exact_fma.glsl. With
// it the device must keep subnormals: DenormPreserve for 32-bit floats, as
// matmul_common.glsl declares it (dropped where the device cannot).
#include "exact_fma.glsl"
#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4464], 4459, 32);

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint NATIVE_FMA = 0u;

layout(std430, binding = 0) buffer State { uint S[]; };              // FP32 bits [heads, dim, dim], key-major
layout(std430, binding = 1) readonly buffer Inputs { uint x[]; };    // q, k, v, decay [n, heads*dim] each, beta [n, heads]
layout(std430, binding = 2) writeonly buffer Outputs { uint o[]; };  // FP32 bits [n, heads*dim]
layout(push_constant) uniform Shape {
  uint heads;
  uint dim;
  uint n;
};

uint f_mul(uint a, uint b) {
  if (NATIVE_FMA != 0u) {
    precise float r = uintBitsToFloat(a) * uintBitsToFloat(b);
    return floatBitsToUint(r);
  }
  precise double p = f32_bits_to_f64(a) * f32_bits_to_f64(b);  // 24 + 24 bits: exact
  return f64_to_f32_bits(p);
}

uint f_add(uint a, uint b) {
  if (NATIVE_FMA != 0u) {
    precise float r = uintBitsToFloat(a) + uintBitsToFloat(b);
    return floatBitsToUint(r);
  }
  return add_exact(a, b);
}

// a - b is a + (-b) in IEEE arithmetic, signed zeros included.
uint f_sub(uint a, uint b) { return f_add(a, b ^ 0x80000000u); }

void main() {
  const uint j = gl_GlobalInvocationID.x, h = gl_GlobalInvocationID.y;
  if (j >= dim || h >= heads) return;
  const uint HD = heads * dim, col = h * dim * dim + j;
  const uint Q = 0u, K = n * HD, V = 2u * n * HD, G = 3u * n * HD, B = 4u * n * HD;
  for (uint t = 0u; t < n; ++t) {
    const uint row = t * HD + h * dim;
    // The decay and u's sum meet S[i][j] in the same i order as the CPU's
    // two loops, so one pass over i gives the same operations.
    uint u = x[V + row + j];
    for (uint i = 0u; i < dim; ++i) {
      const uint s = f_mul(S[col + i * dim], x[G + row + i]);
      S[col + i * dim] = s;
      u = f_sub(u, f_mul(s, x[K + row + i]));
    }
    const uint beta = x[B + t * heads + h];
    uint acc = 0u;
    for (uint i = 0u; i < dim; ++i) {
      const uint s = f_add(S[col + i * dim], f_mul(f_mul(beta, x[K + row + i]), u));
      S[col + i * dim] = s;
      acc = f_add(acc, f_mul(s, x[Q + row + i]));
    }
    o[row + j] = acc;
  }
}
