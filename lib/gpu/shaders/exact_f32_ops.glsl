// FP32 multiply, square root and reciprocal, and a double divided by an
// integer, each correctly rounded as the CPU's instructions are (mulss,
// sqrtss, divss, divsd), with integer operations where a device's float
// arithmetic may not be exact (Vulkan allows sqrt and division a few ulp;
// lavapipe flushes FP32 subnormals). Builds on exact_fma.glsl's
// conversions; needs shaderFloat64 and shaderInt64.
#include "exact_fma.glsl"

const uint kF32Inf = 0x7f800000u;
const uint kF32QuietNan = 0x7fc00000u;

bool f32_is_nan(uint b) { return (b & 0x7fffffffu) > kF32Inf; }

// 2^p as a double (p within double's normal exponents).
double pow2(int p) { return uint64BitsToDouble(uint64_t(1023 + p) << 52); }

// FP32 bits of the value q * 2^p, rounded once: q holds at least 2 bits
// below FP32's 24 and its lowest bit is the sticky bit (round to odd), so
// the round to nearest even of f64_to_f32_bits is the one correct rounding.
uint round_odd_scaled(uint64_t q, int p) { return f64_to_f32_bits(double(q) * pow2(p)); }

// a * b with one rounding: the product of two FP32 values is exact in double.
uint mul_f32(uint a, uint b) {
  precise double p = f32_bits_to_f64(a) * f32_bits_to_f64(b);
  return f64_to_f32_bits(p);
}

// The significand m (implicit bit set, normalised to [2^23, 2^24)) and
// exponent k of a finite non-zero FP32 value: |v| = m * 2^k.
void f32_split(uint b, out uint m, out int k) {
  const uint e = (b >> 23) & 0xffu;
  m = b & 0x7fffffu;
  k = int(e) - 150;
  if (e == 0u) {  // subnormal: normalise
    k = -149;
    while (m < 0x800000u) {
      m <<= 1;
      k -= 1;
    }
  } else {
    m |= 0x800000u;
  }
}

// floor(sqrt(x)) and x - floor(sqrt(x))^2, bit by bit.
uint64_t isqrt64(uint64_t x, out uint64_t rem) {
  uint64_t res = 0ul, bit = 1ul << 62;
  while (bit > x) bit >>= 2;
  while (bit != 0ul) {
    if (x >= res + bit) {
      x -= res + bit;
      res = (res >> 1) + bit;
    } else {
      res >>= 1;
    }
    bit >>= 2;
  }
  rem = x;
  return res;
}

// sqrt(a) for a >= 0 (or NaN), rounded once.
uint sqrt_f32(uint a) {
  if (f32_is_nan(a)) return a | 0x400000u;
  if ((a & 0x7fffffffu) == 0u) return a;  // sqrt(-0) = -0
  if ((a >> 31) != 0u) return 0xffc00000u;  // the CPU's default NaN
  if (a == kF32Inf) return a;
  uint m;
  int k;
  f32_split(a, m, k);
  uint64_t x = uint64_t(m);
  if ((k & 1) != 0) {  // an even exponent to halve
    x <<= 1;
    k -= 1;
  }
  // x * 2^28 < 2^53: a root of 26 or 27 bits, enough below FP32's 24.
  uint64_t rem;
  const uint64_t root = isqrt64(x << 28, rem);
  return round_odd_scaled(root | (rem != 0ul ? 1ul : 0ul), (k - 28) / 2);
}

// 1 / a for a > 0 normal, or inf (0), or NaN, rounded once.
uint recip_f32(uint a) {
  if (f32_is_nan(a)) return a | 0x400000u;
  const uint sign = a & 0x80000000u;
  if ((a & 0x7fffffffu) == kF32Inf) return sign;
  if ((a & 0x7fffffffu) == 0u) return sign | kF32Inf;
  uint m;
  int k;
  f32_split(a, m, k);
  // 1 / (m * 2^k) = (2^52 / m) * 2^(-52 - k); the quotient has 29 or 30 bits.
  const uint64_t num = 1ul << 52;
  const uint64_t q = num / uint64_t(m), rem = num % uint64_t(m);
  return sign | round_odd_scaled(q | (rem != 0ul ? 1ul : 0ul), -52 - k);
}

// a / d rounded once to double (a >= 0 finite, an exact sum of squares; d a
// positive integer): the device's quotient, then corrected by the exact
// remainder a - q * d (Dekker's product), so a division of a few ulp's error
// still gives the CPU's divsd.
double div_f64_by_uint(double a, uint d) {
  precise double D = double(d);
  precise double q = a / D;
  if (a == 0.0 || doubleBitsToUint64(a) >= 0x7ff0000000000000ul) return q;
  for (int pass = 0; pass < 3; ++pass) {
    // q * D = p + e exactly: q split into 26 + 27 bits, D (< 2^32) into 16 + 16.
    precise double p = q * D;
    precise double t = q * 134217729.0;  // 2^27 + 1
    precise double qh = t - (t - q);
    precise double ql = q - qh;
    precise double Dh = double(d & 0xffff0000u);
    precise double Dl = double(d & 0xffffu);
    precise double e = ((qh * Dh - p) + qh * Dl + ql * Dh) + ql * Dl;
    precise double r = (a - p) - e;  // exact: a - p by Sterbenz, r a multiple of ulp(q)
    const uint64_t bits = doubleBitsToUint64(q);
    precise double ulp = pow2(int((bits >> 52) & 0x7fful) - 1075);
    precise double half_up = D * ulp * 0.5;
    // Below a power of two the next double down is half an ulp away.
    precise double half_down = (bits & 0xffffffffffffful) == 0ul ? half_up * 0.5 : half_up;
    const bool odd = (bits & 1ul) != 0ul;
    if (r > half_up || (r == half_up && odd)) q = uint64BitsToDouble(bits + 1ul);
    else if (-r > half_down || (-r == half_down && odd)) q = uint64BitsToDouble(bits - 1ul);
    else break;
  }
  return q;
}

// a + b, a - b and a * b + c (fused: one rounding), each rounded once. The
// product of two FP32 values is exact in double; add_rounded rounds the sum
// once (exact_fma.glsl).
uint add_f32(uint a, uint b) { return add_exact(a, b); }
uint sub_f32(uint a, uint b) { return add_exact(a, b ^ 0x80000000u); }
uint fma_f32(uint a, uint b, uint c) {
  precise double p = f32_bits_to_f64(a) * f32_bits_to_f64(b);
  return add_rounded(p, f32_bits_to_f64(c));
}

// a / b rounded once (divss): the significands' integer quotient, 40 bits
// and a sticky bit.
uint div_f32(uint a, uint b) {
  if (f32_is_nan(a)) return a | 0x400000u;
  if (f32_is_nan(b)) return b | 0x400000u;
  const uint sign = (a ^ b) & 0x80000000u;
  const uint aa = a & 0x7fffffffu, ab = b & 0x7fffffffu;
  if ((aa == kF32Inf && ab == kF32Inf) || (aa == 0u && ab == 0u)) return 0xffc00000u;  // the default NaN
  if (aa == kF32Inf || ab == 0u) return sign | kF32Inf;
  if (aa == 0u || ab == kF32Inf) return sign;
  uint ma, mb;
  int ka, kb;
  f32_split(aa, ma, ka);
  f32_split(ab, mb, kb);
  const uint64_t num = uint64_t(ma) << 40;
  const uint64_t q = num / uint64_t(mb), rem = num % uint64_t(mb);
  return sign | round_odd_scaled(q | (rem != 0ul ? 1ul : 0ul), ka - kb - 40);
}

// Ordered comparisons (false with a NaN), as the CPU's compare masks.
bool gt_f32(uint a, uint b) { return f32_bits_to_f64(a) > f32_bits_to_f64(b); }
bool ge_f32(uint a, uint b) { return f32_bits_to_f64(a) >= f32_bits_to_f64(b); }
bool lt_f32(uint a, uint b) { return f32_bits_to_f64(a) < f32_bits_to_f64(b); }

// cvttps2dq as Highway's ConvertTo gives it: toward zero; out of range or
// NaN, INT32_MIN, made INT32_MAX where the input's sign bit is clear.
int f32_to_i32_trunc(uint a) {
  const uint e = (a >> 23) & 0xffu;
  if (e >= 158u) return (a >> 31) != 0u ? int(0x80000000u) : 0x7fffffff;  // |a| >= 2^31, inf, NaN
  if (e < 127u) return 0;
  const uint m = (a & 0x7fffffu) | 0x800000u;
  const uint mag = e >= 150u ? m << (e - 150u) : m >> (150u - e);
  return (a >> 31) != 0u ? -int(mag) : int(mag);
}

// An int32 as FP32, rounded once (exact below 2^24).
uint i32_to_f32(int v) { return f64_to_f32_bits(double(v)); }
