#version 450
// Y[t, row_base + r] = sum_c W[r, c] * X[t, c] over BF16 weights, one
// invocation per (row, token), in kernels::matmul_bf16's order for a target
// of `lanes` float lanes: lane j takes columns j, j + lanes, ...; columns
// past `cols` are the CPU's zero padding, fma(0, 0, acc) == acc, skipped.
#include "matmul_common.glsl"

layout(std430, binding = 0) readonly buffer Weights { uint w[]; };  // BF16 pairs, row-major [rows, cols]
layout(std430, binding = 1) readonly buffer Acts { uint x[]; };     // FP32 bits [n, cols]
layout(std430, binding = 2) writeonly buffer Out { uint y[]; };     // FP32 bits [n, out_rows]
layout(push_constant) uniform Shape {
  uint rows;      // rows of W in this dispatch
  uint cols;
  uint n;
  uint lanes;
  uint out_rows;  // Y's row stride
  uint row_base;  // Y column of W's row 0
};

weight_t bf16_at(uint i) {
  const uint word = w[i >> 1];
  const uint h = (i & 1u) != 0u ? word >> 16 : word & 0xffffu;
  return weight_of_f32_bits(h << 16);
}

void main() {
  const uint r = gl_GlobalInvocationID.x, t = gl_GlobalInvocationID.y;
  if (r >= rows || t >= n) return;
  uint acc[kMaxLanes];
  for (uint j = 0u; j < kMaxLanes; ++j) acc[j] = 0u;
  const uint wrow = r * cols, xrow = t * cols;
  for (uint c0 = 0u; c0 < cols; c0 += lanes)
    for (uint j = 0u; j < lanes && c0 + j < cols; ++j)
      acc[j] = acc_fma(bf16_at(wrow + c0 + j), x[xrow + c0 + j], acc[j]);
  y[t * out_rows + row_base + r] = reduce_lanes(acc, lanes);
}
