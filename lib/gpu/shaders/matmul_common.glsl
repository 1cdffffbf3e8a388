// What the matrix-product shaders share: the accumulators of one output in
// the CPU kernel's order (kernels/matmul.cpp): lane j of a vector of LANES
// sums the products of its columns in increasing order with FMA, starting
// from +0; the lanes are then summed pairwise, halving (lane i + lane
// i + L/2, ..., as SumOfLanes does on SSE4, AVX2 and AVX-512).
//
// Two SPIR-V variants are built from each shader (lib/CMakeLists.txt):
// - exact (the default): NATIVE_FMA (specialization constant 1) uses the
//   device's fma() where the start-up probe found it fused, else every
//   rounding is emulated (exact_fma.glsl). Declares Float64 and Int64.
// - native (K3_NATIVE_FMA_ONLY defined): the device's fused fma() and float
//   arithmetic only, weights as floats, no 64-bit types, so a fused device
//   without shaderFloat64/shaderInt64 can run it (gpu/shader_variant.h
//   picks one).
//
// Both declare DenormPreserve for 32-bit floats (SPV_KHR_float_controls):
// where the device's own fma() and adds run, they must keep subnormals as
// the CPU does. The pipeline drops the mode on a device that cannot keep
// them (gpu/spirv_denorm_preserve.h), where only the emulation runs.
#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4464], 4459, 32);

#ifdef K3_NATIVE_FMA_ONLY
#define weight_t float
weight_t weight_of_f32_bits(uint b) { return uintBitsToFloat(b); }
#else
#include "exact_fma.glsl"
#define weight_t double
weight_t weight_of_f32_bits(uint b) { return f32_bits_to_f64(b); }
#endif

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint NATIVE_FMA = 0u;
const uint kMaxLanes = 16u;

uint acc_fma(weight_t w, uint x, uint acc) {
#ifdef K3_NATIVE_FMA_ONLY
  precise float r = fma(w, uintBitsToFloat(x), uintBitsToFloat(acc));
  return floatBitsToUint(r);
#else
  if (NATIVE_FMA != 0u) {
    precise float r = fma(float(w), uintBitsToFloat(x), uintBitsToFloat(acc));
    return floatBitsToUint(r);
  }
  return fma_exact(w, x, acc);
#endif
}

uint acc_add(uint a, uint b) {
#ifdef K3_NATIVE_FMA_ONLY
  precise float r = uintBitsToFloat(a) + uintBitsToFloat(b);
  return floatBitsToUint(r);
#else
  if (NATIVE_FMA != 0u) {
    precise float r = uintBitsToFloat(a) + uintBitsToFloat(b);
    return floatBitsToUint(r);
  }
  return add_exact(a, b);
#endif
}

uint reduce_lanes(inout uint acc[kMaxLanes], uint lanes) {
  for (uint h = lanes / 2u; h >= 1u; h /= 2u)
    for (uint i = 0u; i < h; ++i) acc[i] = acc_add(acc[i], acc[i + h]);
  return acc[0];
}
