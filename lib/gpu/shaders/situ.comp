#version 450
// g[i] = situ(g[i], u[i]) as kernels::situ_span computes it (kernels/situ.cpp)
// on the x86 targets with FMA (AVX2, AVX-512: the ones the device follows),
// step by step: Highway's Exp, Expm1 and Tanh (hwy/contrib/math/math-inl.h,
// libhwy 1.0.3), their range reduction and Estrin polynomials with fused
// MulAdd, x86's Max and conversions, every operation rounded once with the
// exact emulation (exact_f32_ops.glsl). Elementwise: a lane's result depends
// only on its own g and u, so there is no lane count to follow.
#include "exact_f32_ops.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint NATIVE_FMA = 0u;  // unused: every step is emulated

layout(std430, binding = 0) buffer Gate { uint g[]; };           // FP32 bits, in and out
layout(std430, binding = 1) readonly buffer Up { uint u[]; };    // FP32 bits
layout(push_constant) uniform Params {
  uint count;
  uint beta;         // FP32 bits
  uint linear_beta;  // FP32 bits
  uint has_linear_beta;
  uint row_width;    // elements per dispatch row (gl_GlobalInvocationID.y)
};

const uint kOne = 0x3f800000u;
const uint kTwo = 0x40000000u;
const uint kSign = 0x80000000u;
// Highway's constants as the CPU rounds them to FP32.
const uint kOneOverLog2 = 0x3fb8aa3bu;
const uint kLn2Part0 = 0xbf317200u;
const uint kLn2Part1 = 0xb5bfbe8eu;
const uint kExpK0 = 0x3f000000u;
const uint kExpK1 = 0x3e2aaaabu;
const uint kExpK2 = 0x3d2aaa7au;
const uint kExpK3 = 0x3c0888a6u;
const uint kExpK4 = 0x3ab696c9u;
const uint kExpK5 = 0x39502bdau;
const uint kLn2Over2 = 0x3eb17218u;
const uint kTanhLimit = 0x4195b844u;
const uint kExpLowerBound = 0xc2d00000u;  // -104, also SiTU's kMinG

// ExpImpl<float>::ExpPoly: MulAdd(Estrin(x, k0..k5), x * x, x).
uint exp_poly(uint x) {
  const uint x2 = mul_f32(x, x);
  const uint x4 = mul_f32(x2, x2);
  const uint estrin = fma_f32(x4, fma_f32(kExpK5, x, kExpK4),
                              fma_f32(x2, fma_f32(kExpK3, x, kExpK2), fma_f32(kExpK1, x, kExpK0)));
  return fma_f32(estrin, mul_f32(x, x), x);
}

// q = int(x / ln 2 + (x < 0 ? -0.5 : 0.5)), truncated.
int exp_quotient(uint x) { return f32_to_i32_trunc(fma_f32(x, kOneOverLog2, 0x3f000000u | (x & kSign))); }

// ExpReduce: x + q * -ln 2 in two parts.
uint exp_reduce(uint x, int q) {
  const uint qf = i32_to_f32(q);
  return fma_f32(qf, kLn2Part1, fma_f32(qf, kLn2Part0, x));
}

// LoadExpShortRange: v * 2^(e >> 1) * 2^(e - (e >> 1)), the powers built from bits.
uint load_exp_short_range(uint v, int e) {
  const int y = e >> 1;
  return mul_f32(mul_f32(v, uint(y + 127) << 23), uint(e - y + 127) << 23);
}

uint hwy_exp(uint x) {
  const int q = exp_quotient(x);
  const uint y = load_exp_short_range(add_f32(exp_poly(exp_reduce(x, q)), kOne), q);
  return ge_f32(x, kExpLowerBound) ? y : 0u;
}

uint hwy_expm1(uint x) {
  const int q = exp_quotient(x);
  const uint y = exp_poly(exp_reduce(x, q));
  const uint z = lt_f32(x & ~kSign, kLn2Over2) ? y : sub_f32(load_exp_short_range(add_f32(y, kOne), q), kOne);
  return lt_f32(x, kExpLowerBound) ? (kOne | kSign) : z;
}

uint hwy_tanh(uint x) {
  const uint sign = x & kSign;
  const uint ax = x ^ sign;
  const uint y = hwy_expm1(mul_f32(ax, kTwo));
  const uint z = gt_f32(ax, kTanhLimit) ? kOne : div_f32(y, add_f32(y, kTwo));
  return z ^ sign;
}

// SituVec (kernels/situ.cpp) for one lane.
uint situ(uint gv, uint uv) {
  const uint max_g = gt_f32(gv, kExpLowerBound) ? gv : kExpLowerBound;  // maxps: NaN gives the second operand
  const uint e = hwy_exp(max_g ^ kSign);
  const uint sig = ge_f32(gv, kExpLowerBound) ? div_f32(kOne, add_f32(kOne, e)) : 0u;
  const uint a = mul_f32(mul_f32(beta, hwy_tanh(div_f32(gv, beta))), sig);
  uint up = uv;
  if (has_linear_beta != 0u) up = mul_f32(linear_beta, hwy_tanh(div_f32(uv, linear_beta)));
  return mul_f32(a, up);
}

void main() {
  const uint i = gl_GlobalInvocationID.y * row_width + gl_GlobalInvocationID.x;
  if (gl_GlobalInvocationID.x >= row_width || i >= count) return;
  g[i] = situ(g[i], u[i]);
}
