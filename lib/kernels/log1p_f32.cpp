#include "kernels/log1p_f32.h"

#include <cstdint>
#include <cstring>
#include <limits>

namespace k3::kernels {
namespace {

int32_t bits_of(float v) {
  int32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

float float_of(int32_t b) {
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

// ln 2 = kLn2Hi + kLn2Lo, kLn2Hi with its low bits zero so k * kLn2Hi is
// exact for the k an FP32 argument gives.
constexpr float kLn2Hi = 6.9313812256e-01f;  // 0x3f317180
constexpr float kLn2Lo = 9.0580006145e-06f;  // 0x3717f7d1
// R(z) = z (L1 + z (L2 + ... + z L7)): log(1 + f) - f + hfsq - s hfsq on
// the reduced range.
constexpr float kL1 = 6.6666668653e-01f, kL2 = 4.0000000596e-01f, kL3 = 2.8571429849e-01f;
constexpr float kL4 = 2.2222198546e-01f, kL5 = 1.8183572590e-01f, kL6 = 1.5313838422e-01f;
constexpr float kL7 = 1.4798198640e-01f;

}  // namespace

float log1p_f32(float x) {
  const int32_t hx = bits_of(x), ax = hx & 0x7fffffff;
  int32_t k = 1, hu = 0;
  float f = 0.0f, c = 0.0f;
  if (hx < 0x3ed413d7) {     // x < 0.41422, negatives included
    if (ax >= 0x3f800000) {  // x <= -1, or a negative NaN
      if (x == -1.0f) return -std::numeric_limits<float>::infinity();
      return std::numeric_limits<float>::quiet_NaN();
    }
    if (ax < 0x31000000) {            // |x| < 2^-29: x - x^2/2 is exact enough
      if (ax < 0x24800000) return x;  // |x| < 2^-54
      return x - x * x * 0.5f;
    }
    if (hx > 0 || hx <= static_cast<int32_t>(0xbe95f61f)) {  // -0.2929 < x < 0.41422: no reduction
      k = 0;
      f = x;
      hu = 1;
    }
  }
  if (hx >= 0x7f800000) return x + x;  // +inf, NaN
  if (k != 0) {
    float u;
    if (hx < 0x5a000000) {  // 1 + x rounds: c corrects for it
      u = 1.0f + x;
      hu = bits_of(u);
      k = (hu >> 23) - 127;
      c = k > 0 ? 1.0f - (u - x) : x - (u - 1.0f);
      c /= u;
    } else {  // 1 is below x's last bit
      u = x;
      hu = bits_of(u);
      k = (hu >> 23) - 127;
      c = 0.0f;
    }
    hu &= 0x007fffff;
    if (hu < 0x3504f7) {  // 1 + f in [1, sqrt(2))
      u = float_of(hu | 0x3f800000);
    } else {  // halved into [sqrt(2)/2, 1)
      k += 1;
      u = float_of(hu | 0x3f000000);
      hu = (0x00800000 - hu) >> 2;
    }
    f = u - 1.0f;
  }
  const float hfsq = 0.5f * f * f;
  const float fk = static_cast<float>(k);
  if (hu == 0) {  // |f| < 2^-20
    if (f == 0.0f) {
      if (k == 0) return 0.0f;
      c += fk * kLn2Lo;
      return fk * kLn2Hi + c;
    }
    const float R = hfsq * (1.0f - static_cast<float>(0.66666666666666666) * f);
    if (k == 0) return f - R;
    return fk * kLn2Hi - ((R - (fk * kLn2Lo + c)) - f);
  }
  const float s = f / (2.0f + f);
  const float z = s * s;
  const float R = z * (kL1 + z * (kL2 + z * (kL3 + z * (kL4 + z * (kL5 + z * (kL6 + z * kL7))))));
  if (k == 0) return f - (hfsq - s * (hfsq + R));
  return fk * kLn2Hi - ((hfsq - (s * (hfsq + R) + (fk * kLn2Lo + c))) - f);
}

}  // namespace k3::kernels
