// MXFP4 decoding against the values written out in the SPEC (E2M1 table and
// E8M0 = 2^(s-127)), typed in here as literals rather than recomputed.
#include "kernels/mxfp4.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "common/error.h"
#include "kernels/matmul.h"

namespace k3::kernels {
namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

TEST(Mxfp4, EveryCode) {
  const float expected[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                              -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  for (int c = 0; c < 16; ++c) {
    EXPECT_EQ(bits_of(mxfp4_code_value(static_cast<uint8_t>(c))), bits_of(expected[c])) << "code " << c;
    // Only the low nibble counts.
    EXPECT_EQ(bits_of(mxfp4_code_value(static_cast<uint8_t>(c | 0xa0))), bits_of(expected[c]));
  }
  EXPECT_TRUE(std::signbit(mxfp4_code_value(8)));
}

// The byte-shuffle decoders' table: twice each code value, as integers.
TEST(Mxfp4, TwiceCodesAreTwiceTheCodeValues) {
  const int8_t expected[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  for (int c = 0; c < 16; ++c) {
    EXPECT_EQ(kMxfp4TwiceCodes.v[c], expected[c]) << "code " << c;
    EXPECT_EQ(static_cast<float>(kMxfp4TwiceCodes.v[c]) * 0.5f, mxfp4_code_value(static_cast<uint8_t>(c)));
  }
  EXPECT_EQ(reinterpret_cast<uintptr_t>(kMxfp4TwiceCodes.v) % 16, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(kMxfp4CodeValues) % 64, 0u);
}

TEST(Mxfp4, ScaleEdgeCases) {
  // 2^-127 is subnormal in FP32: bit pattern 0x00400000.
  EXPECT_EQ(bits_of(mxfp4_scale_value(0)), 0x00400000u);
  EXPECT_EQ(mxfp4_scale_value(0), 5.877471754111438e-39f);
  EXPECT_EQ(mxfp4_scale_value(1), 1.1754943508222875e-38f);  // 2^-126, smallest normal
  EXPECT_EQ(bits_of(mxfp4_scale_value(1)), 0x00800000u);
  EXPECT_EQ(mxfp4_scale_value(126), 0.5f);
  EXPECT_EQ(mxfp4_scale_value(127), 1.0f);
  EXPECT_EQ(mxfp4_scale_value(128), 2.0f);
  EXPECT_EQ(mxfp4_scale_value(253), 8.507059173023462e37f);  // 2^126
  EXPECT_EQ(bits_of(mxfp4_scale_value(253)), 0x7e800000u);
  EXPECT_TRUE(std::isnan(mxfp4_scale_value(255)));
  // Products with the smallest scale stay exact (subnormal, not flushed).
  EXPECT_EQ(mxfp4_code_value(1) * mxfp4_scale_value(0), 2.938735877055719e-39f);    // 2^-128
  EXPECT_EQ(mxfp4_code_value(15) * mxfp4_scale_value(0), -3.526483104933726e-38f);  // -6*2^-127
}

TEST(Mxfp4, FindInvalidScale) {
  std::vector<uint8_t> s = {0, 1, 126, 127, 128, 253};
  EXPECT_EQ(find_invalid_mxfp4_scale(s.data(), s.size()), s.size());
  EXPECT_EQ(find_invalid_mxfp4_scale(s.data(), 0), 0u);
  s.push_back(254);
  s.push_back(1);
  EXPECT_EQ(find_invalid_mxfp4_scale(s.data(), s.size()), 6u);
  s[2] = 255;
  EXPECT_EQ(find_invalid_mxfp4_scale(s.data(), s.size()), 2u);
  // Past a SIMD-sized prefix too.
  std::vector<uint8_t> big(1000, 127);
  big[777] = 255;
  EXPECT_EQ(find_invalid_mxfp4_scale(big.data(), big.size()), 777u);
  big[777] = 253;
  EXPECT_EQ(find_invalid_mxfp4_scale(big.data(), big.size()), big.size());
}

TEST(Mxfp4, DequantizeRowNibbleOrderAndGroups) {
  // 64 columns = 2 groups. Byte 0x71: low nibble 1 (column 0 = 0.5), high
  // nibble 7 (column 1 = 6). Group 0 scale 2^1, group 1 scale 2^-2.
  std::vector<uint8_t> packed(32, 0x00);
  packed[0] = 0x71;
  packed[15] = 0x9a;  // columns 30 (-1) and 31 (-0.5)
  packed[16] = 0xf4;  // columns 32 (2) and 33 (-6)
  const uint8_t scales[2] = {128, 125};
  std::vector<float> out(64);
  dequantize_mxfp4_row(packed.data(), scales, 64, out.data());
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 12.0f);
  EXPECT_EQ(out[2], 0.0f);
  EXPECT_EQ(out[30], -2.0f);
  EXPECT_EQ(out[31], -1.0f);
  EXPECT_EQ(out[32], 0.5f);
  EXPECT_EQ(out[33], -1.5f);
  EXPECT_EQ(out[63], 0.0f);
}

TEST(Mxfp4, MatvecKnownValue) {
  // One row, 32 columns, every byte 0x72 -> pairs (1, 6); scale 2^-1; x = 1.
  // Sum = 16 * (1 + 6) * 0.5 = 56.
  std::vector<uint8_t> packed(16, 0x72);
  const uint8_t scale = 126;
  std::vector<float> x(32, 1.0f);
  float y = 0.0f;
  matmul_mxfp4_scalar(packed.data(), &scale, 1, 32, x.data(), 1, &y);
  EXPECT_EQ(y, 56.0f);
  float y2 = 0.0f;
  matmul_mxfp4(packed.data(), &scale, 1, 32, x.data(), 1, &y2, nullptr);
  EXPECT_EQ(y2, 56.0f);
}

TEST(Mxfp4, MatmulRefusesColsNotMultipleOf32) {
  std::vector<uint8_t> packed(24, 0x11), scales(2, 127);
  std::vector<float> x(48, 1.0f);
  float y[1] = {0};
  EXPECT_THROW(matmul_mxfp4(packed.data(), scales.data(), 1, 48, x.data(), 1, y, nullptr), k3::Error);
}

}  // namespace
}  // namespace k3::kernels
