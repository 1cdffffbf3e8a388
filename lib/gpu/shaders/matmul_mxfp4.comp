#version 450
// Y[t, row_base + r] = sum_c W[r, c] * X[t, c] over MXFP4 weights (packed
// [rows, cols/2], low nibble = even column; scales [rows, cols/32] E8M0),
// in kernels::matmul_mxfp4's order for `lanes` float lanes: within each
// 32-column group the CPU takes the even columns, then the odd ones, as
// 32/lanes vectors, lane j of vector v being position v * lanes + j of that
// order; groups in increasing order. Weights are code * 2^(s-127), exact.
#include "matmul_common.glsl"

layout(std430, binding = 0) readonly buffer Packed { uint packed[]; };  // bytes
layout(std430, binding = 1) readonly buffer Scales { uint scales[]; };  // bytes
layout(std430, binding = 2) readonly buffer Acts { uint x[]; };         // FP32 bits [n, cols]
layout(std430, binding = 3) writeonly buffer Out { uint y[]; };         // FP32 bits [n, out_rows]
layout(push_constant) uniform Shape {
  uint rows;
  uint cols;
  uint n;
  uint lanes;
  uint out_rows;
  uint row_base;
};

#ifdef K3_NATIVE_FMA_ONLY
const float kCodeMagnitude[8] = float[8](0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0);
// 2^(s-127): FP32's exponent field, the subnormal 2^-127 for s = 0.
weight_t scale_of(uint s) { return s == 0u ? uintBitsToFloat(0x400000u) : uintBitsToFloat(s << 23); }
// The CPU's weight is this FP32 product: exact, except that codes 4 and 6
// at scale byte 253 overflow to inf.
weight_t magnitude(uint code, weight_t scale) {
  precise float m = kCodeMagnitude[code & 7u] * scale;
  return m;
}
#else
const double kCodeMagnitude[8] = double[8](0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0);
weight_t scale_of(uint s) { return uint64BitsToDouble(uint64_t(s + 896u) << 52); }
// The product rounded to FP32 as the CPU's (exact but for the overflow to inf).
weight_t magnitude(uint code, weight_t scale) {
  return f32_bits_to_f64(f64_to_f32_bits(kCodeMagnitude[code & 7u] * scale));
}
#endif

uint byte_at_packed(uint i) { return (packed[i >> 2] >> ((i & 3u) * 8u)) & 0xffu; }
uint byte_at_scales(uint i) { return (scales[i >> 2] >> ((i & 3u) * 8u)) & 0xffu; }

void main() {
  const uint r = gl_GlobalInvocationID.x, t = gl_GlobalInvocationID.y;
  if (r >= rows || t >= n) return;
  uint acc[kMaxLanes];
  for (uint j = 0u; j < kMaxLanes; ++j) acc[j] = 0u;
  const uint groups = cols / 32u;
  for (uint g = 0u; g < groups; ++g) {
    const uint s = byte_at_scales(r * groups + g);
    const weight_t scale = scale_of(s);  // 2^(s-127)
    for (uint v = 0u; v < 32u / lanes; ++v) {
      for (uint j = 0u; j < lanes; ++j) {
        const uint p = v * lanes + j;  // position in the evens-then-odds order
        const uint byte_index = p & 15u;
        const uint b = byte_at_packed(r * (cols / 2u) + g * 16u + byte_index);
        const uint code = p < 16u ? (b & 15u) : (b >> 4);
        const uint col = g * 32u + (p < 16u ? 2u * p : 2u * (p - 16u) + 1u);
        const weight_t mag = magnitude(code, scale);
        acc[j] = acc_fma((code & 8u) != 0u ? -mag : mag, x[t * cols + col], acc[j]);
      }
    }
  }
  y[t * out_rows + row_base + r] = reduce_lanes(acc, lanes);
}
