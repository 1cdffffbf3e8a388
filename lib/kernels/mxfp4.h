// MXFP4 (OCP microscaling FP4, compressed-tensors mxfp4-pack-quantized):
// 4-bit E2M1 codes, two per byte (low nibble = even column), and one E8M0
// scale byte per group of 32 consecutive columns of a row.
#pragma once

#include <cstddef>
#include <cstdint>

namespace k3::kernels {

inline constexpr size_t kMxfp4Group = 32;

// The 16 code values: (c & 8 ? -1 : +1) * {0, 0.5, 1, 1.5, 2, 3, 4, 6}[c & 7].
// Code 8 is -0.0. The one table every decoder uses (aligned for SIMD loads).
alignas(64) inline constexpr float kMxfp4CodeValues[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                                           -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// Twice each code value, the small integers {0, 1, 2, 3, 4, 6, 8, 12} with
// their signs (code 8 becomes 0), for byte-shuffle decoding that multiplies
// by half the group scale (exact either way).
struct Mxfp4TwiceCodes {
  alignas(16) int8_t v[16];
};
inline constexpr Mxfp4TwiceCodes make_mxfp4_twice_codes() {
  Mxfp4TwiceCodes t{};
  for (int i = 0; i < 16; ++i) t.v[i] = static_cast<int8_t>(kMxfp4CodeValues[i] * 2.0f);
  return t;
}
inline constexpr Mxfp4TwiceCodes kMxfp4TwiceCodes = make_mxfp4_twice_codes();

// Value of one 4-bit code (only the low 4 bits of c are used).
float mxfp4_code_value(uint8_t c);

// Value of one E8M0 scale byte: 2^(s - 127), exact (s = 0 gives the subnormal
// 2^-127). 255 is NaN in E8M0 and returns NaN; 254 returns 2^127.
float mxfp4_scale_value(uint8_t s);

// Index of the first scale byte >= 254 (NaN, or large enough to overflow FP32
// with large codes), or n when all are usable.
size_t find_invalid_mxfp4_scale(const uint8_t* scales, size_t n);

// Decodes one row of `cols` weights (cols a multiple of 32) to FP32.
void dequantize_mxfp4_row(const uint8_t* packed, const uint8_t* scales, size_t cols, float* out);

}  // namespace k3::kernels
