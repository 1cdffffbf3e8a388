// What the matrix-product shaders share: the accumulators of one output in
// the CPU kernel's order (kernels/matmul.cpp): lane j of a vector of LANES
// sums the products of its columns in increasing order with FMA, starting
// from +0; the lanes are then summed pairwise, halving (lane i + lane
// i + L/2, ..., as SumOfLanes does on SSE4, AVX2 and AVX-512).
// NATIVE_FMA (specialization constant 1): the device's fma() is fused
// (probed at start-up) and its float arithmetic is used as is; else every
// rounding is emulated (exact_fma.glsl).
#include "exact_fma.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint NATIVE_FMA = 0u;
const uint kMaxLanes = 16u;

uint acc_fma(double w, uint x, uint acc) {
  if (NATIVE_FMA != 0u) {
    precise float r = fma(float(w), uintBitsToFloat(x), uintBitsToFloat(acc));
    return floatBitsToUint(r);
  }
  return fma_exact(w, x, acc);
}

uint acc_add(uint a, uint b) {
  if (NATIVE_FMA != 0u) {
    precise float r = uintBitsToFloat(a) + uintBitsToFloat(b);
    return floatBitsToUint(r);
  }
  return add_exact(a, b);
}

uint reduce_lanes(inout uint acc[kMaxLanes], uint lanes) {
  for (uint h = lanes / 2u; h >= 1u; h /= 2u)
    for (uint i = 0u; i < h; ++i) acc[i] = acc_add(acc[i], acc[i + h]);
  return acc[0];
}
