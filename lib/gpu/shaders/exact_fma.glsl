// FP32 arithmetic with the bits of the CPU kernels, on any Vulkan device.
//
// Floats travel as their bit patterns (uint) and every rounding is done
// here with integer operations: a device may flush subnormals in float
// arithmetic and conversions (lavapipe does: shaderDenormPreserveFloat32 is
// false), the CPU does not. fma(w, x, acc) with one rounding, as the CPU's
// vector FMA: the product of a BF16 or MXFP4 weight (at most 8 significant
// bits) and an FP32 activation (24) is exact in double; the sum is made
// exact by TwoSum, rounded to odd in double and then to nearest even in
// FP32, which rounds once (53 >= 24 + 2 bits). Needs shaderFloat64 and
// shaderInt64.
#extension GL_ARB_gpu_shader_int64 : require

const uint64_t kF64ExpMask = 0x7ff0000000000000ul;

// The value of FP32 bits b, exactly, without a float operation.
double f32_bits_to_f64(uint b) {
  const uint e = (b >> 23) & 0xffu;
  const uint m = b & 0x7fffffu;
  const uint64_t sign = uint64_t(b >> 31) << 63;
  if (e == 255u) return double(uintBitsToFloat(b));  // inf, NaN
  if (e == 0u) {  // zero or subnormal: m * 2^-149 (both exact)
    const double v = double(m) * uint64BitsToDouble(uint64_t(1023 - 149) << 52);
    return (b >> 31) != 0u ? -v : v;
  }
  return uint64BitsToDouble(sign | (uint64_t(e + 896u) << 52) | (uint64_t(m) << 29));
}

// FP32 bits of d rounded to nearest even (d is rounded to odd beforehand
// where it is inexact, so this is the one correct rounding of the exact sum).
uint f64_to_f32_bits(double d) {
  const uint64_t b = doubleBitsToUint64(d);
  const uint sign = uint(b >> 63) << 31;
  const int E = int((b >> 52) & 0x7fful);
  if (E == 0x7ff) return sign | 0x7f800000u | (((b & 0xffffffffffffful) != 0ul) ? 0x400000u : 0u);
  if (E == 0) return sign;  // double subnormals lie far below FP32's range
  const int e = E - 1023;
  if (e > 127) return sign | 0x7f800000u;
  const uint64_t mant = (b & 0xffffffffffffful) | (1ul << 52);
  const int shift = e >= -126 ? 29 : 29 + (-126 - e);
  if (shift > 60) return sign;
  uint64_t q = mant >> shift;
  const uint64_t rem = mant & ((1ul << shift) - 1ul);
  const uint64_t halfway = 1ul << (shift - 1);
  if (rem > halfway || (rem == halfway && (q & 1ul) != 0ul)) q += 1ul;
  // A normal value: the biased exponent plus the 24-bit significand minus
  // its implicit bit (a carry out of the significand bumps the exponent,
  // up to infinity). A subnormal: the significand alone.
  if (e >= -126) return sign | uint((uint64_t(e + 127) << 23) + q - (1ul << 23));
  return sign | uint(q);
}

// FP32 bits of a + b rounded once (a and b exact doubles).
uint add_rounded(double a, double b) {
  precise double s = a + b;
  precise double bb = s - a;
  precise double err = (a - (s - bb)) + (b - bb);
  uint64_t bits = doubleBitsToUint64(s);
  if ((bits & kF64ExpMask) != kF64ExpMask && err != 0.0) {
    if ((err < 0.0) != (s < 0.0)) bits -= 1ul;  // toward zero: the truncation
    bits |= 1ul;                                // round to odd
  }
  return f64_to_f32_bits(uint64BitsToDouble(bits));
}

// fma(w, x, acc) rounded once; acc, x and the result as FP32 bits, w exact.
uint fma_exact(double w, uint x, uint acc) {
  precise double p = w * f32_bits_to_f64(x);
  return add_rounded(p, f32_bits_to_f64(acc));
}

uint add_exact(uint a, uint b) { return add_rounded(f32_bits_to_f64(a), f32_bits_to_f64(b)); }
