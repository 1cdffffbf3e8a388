// MXFP4 (OCP microscaling FP4, compressed-tensors mxfp4-pack-quantized):
// 4-bit E2M1 codes, two per byte (low nibble = even column), and one E8M0
// scale byte per group of 32 consecutive columns of a row.
#pragma once

#include <cstddef>
#include <cstdint>

namespace k3::kernels {

inline constexpr size_t kMxfp4Group = 32;

// The 16 code values: (c & 8 ? -1 : +1) * {0, 0.5, 1, 1.5, 2, 3, 4, 6}[c & 7].
// Code 8 is -0.0.
extern const float kMxfp4CodeValues[16];

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
