#include "kernels/exp_f32.h"

#include <cstdint>
#include <cstring>

namespace k3::kernels {
namespace {

// 2^(i/32) as double bits, less i << 47 so that adding k << 47 (k = i mod
// 32 plus 32 times the power of two) rebuilds 2^(k/32): exp2f_data.c's tab.
constexpr uint64_t kExp2Table[32] = {0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
                                     0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
                                     0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
                                     0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
                                     0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
                                     0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
                                     0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
                                     0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540};
constexpr double kInvLn2x32 = 0x1.71547652b82fep+5;  // 32 / ln 2
constexpr double kShift = 0x1.8p+52;                 // rounds to an integer in its last bits
// The cubic for 2^(r/32), r in [-1/2, 1/2].
constexpr double kC0 = 0x1.c6af84b912394p-20, kC1 = 0x1.ebfce50fac4f3p-13, kC2 = 0x1.62e42ff0c52d6p-6;

}  // namespace

float exp_f32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if (((bits >> 20) & 0x7ff) >= 0x42b) {  // |x| >= 88, inf or NaN
    if (bits == 0xff800000u) return 0.0f;
    if (((bits >> 20) & 0x7ff) >= 0x7f8) return x + x;
    if (x > 0x1.62e42ep6f) return __builtin_inff();  // e^x past FLT_MAX
    if (x < -0x1.9fe368p6f) return 0.0f;             // below half the smallest subnormal
  }
  const double xd = x;
  const double z = kInvLn2x32 * xd;
  double kd = z + kShift;
  uint64_t ki;
  std::memcpy(&ki, &kd, sizeof ki);
  kd -= kShift;
  const double r = z - kd;
  const uint64_t t = kExp2Table[ki % 32] + (ki << 47);
  double s;
  std::memcpy(&s, &t, sizeof s);
  const double c = kC0 * r + kC1;
  const double r2 = r * r;
  double y = kC2 * r + 1.0;
  y = c * r2 + y;
  y = y * s;
  return static_cast<float>(y);
}

}  // namespace k3::kernels
