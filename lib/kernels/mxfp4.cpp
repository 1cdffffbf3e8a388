#include "kernels/mxfp4.h"

#include <cstring>
#include <limits>

namespace k3::kernels {

float mxfp4_code_value(uint8_t c) { return kMxfp4CodeValues[c & 15]; }

float mxfp4_scale_value(uint8_t s) {
  if (s == 255) return std::numeric_limits<float>::quiet_NaN();
  // Build the binary32 bit pattern directly: exponent field s for s >= 1
  // (2^(s-127)), and the subnormal with only mantissa bit 22 set for s = 0.
  const uint32_t bits = s == 0 ? 0x00400000u : static_cast<uint32_t>(s) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

size_t find_invalid_mxfp4_scale(const uint8_t* scales, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (scales[i] >= 254) return i;
  }
  return n;
}

void dequantize_mxfp4_row(const uint8_t* packed, const uint8_t* scales, size_t cols, float* out) {
  for (size_t c = 0; c < cols; c += 2) {
    const float s = mxfp4_scale_value(scales[c / kMxfp4Group]);
    const uint8_t b = packed[c / 2];
    out[c] = kMxfp4CodeValues[b & 15] * s;
    out[c + 1] = kMxfp4CodeValues[b >> 4] * s;
  }
}

}  // namespace k3::kernels
