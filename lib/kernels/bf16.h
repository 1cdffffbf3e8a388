// BF16 <-> FP32 conversion. BF16 is the upper 16 bits of an IEEE binary32.
#pragma once

#include <cstdint>
#include <cstring>

namespace k3::kernels {

// Exact: every BF16 value is an FP32 value.
inline float bf16_to_f32(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// Round to nearest, ties to even. Values past the largest BF16 round to inf
// (as IEEE rounding does); NaN stays NaN (quiet bit forced so that a NaN whose
// payload lives only in the low 16 bits does not become inf).
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  }
  const uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;
  return static_cast<uint16_t>(u >> 16);
}

}  // namespace k3::kernels
