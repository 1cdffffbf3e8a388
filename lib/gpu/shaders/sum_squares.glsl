// The sum of squares of one row in double, in index order, each square
// exact (48 bits) and each sum rounded once: the reduction of
// kernels::rms_scale (kernels/rms_norm.cpp) and kernels::l2_normalize
// (kernels/l2_normalize.h), both scalar code, so one order on every CPU
// target. The including shader defines SQUARES_ROW(i), the FP32 bits of
// the row's element at index i of its buffer, before the include; needs
// exact_fma.glsl (f32_bits_to_f64) and shaderFloat64.

double sum_squares(uint base, uint dim) {
  precise double ss = 0.0;
  for (uint c = 0u; c < dim; ++c) {
    precise double v = f32_bits_to_f64(SQUARES_ROW(base + c));
    precise double sq = v * v;  // exact: 48 bits
    ss = ss + sq;
  }
  return ss;
}

// kernels::rms_scale: 1 / sqrt(float(ss / dim) + eps), the mean rounded to
// double then to FP32, then FP32 add, sqrt and reciprocal, each rounded
// once (exact_f32_ops.glsl).
uint rms_scale(uint base, uint dim, uint eps) {
  const uint mean = f64_to_f32_bits(div_f64_by_uint(sum_squares(base, dim), dim));
  return recip_f32(sqrt_f32(add_exact(mean, eps)));
}
