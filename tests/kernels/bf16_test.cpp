// BF16 conversion against literal bit patterns.
#include "kernels/bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace k3::kernels {
namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}
uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
uint16_t round_bits(uint32_t u) { return f32_to_bf16(from_bits(u)); }

TEST(Bf16, ToF32IsExact) {
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xc040), -3.0f);
  EXPECT_EQ(bf16_to_f32(0x4049), 3.140625f);
  EXPECT_EQ(bits_of(bf16_to_f32(0x0001)), 0x00010000u);  // subnormal kept
  EXPECT_EQ(bits_of(bf16_to_f32(0x8000)), 0x80000000u);  // -0
  EXPECT_TRUE(std::isinf(bf16_to_f32(0xff80)) && bf16_to_f32(0xff80) < 0);
  EXPECT_TRUE(std::isnan(bf16_to_f32(0x7fc0)));
  EXPECT_TRUE(std::isnan(bf16_to_f32(0x7f81)));
}

TEST(Bf16, RoundToNearestEven) {
  EXPECT_EQ(round_bits(0x3f800000u), 0x3f80);  // 1.0 exact
  EXPECT_EQ(round_bits(0x3f807fffu), 0x3f80);  // just below half: down
  EXPECT_EQ(round_bits(0x3f808000u), 0x3f80);  // tie, even neighbour below
  EXPECT_EQ(round_bits(0x3f808001u), 0x3f81);  // just above half: up
  EXPECT_EQ(round_bits(0x3f818000u), 0x3f82);  // tie, odd below -> even above
  EXPECT_EQ(round_bits(0x3f81ffffu), 0x3f82);
  EXPECT_EQ(round_bits(0xbf808000u), 0xbf80);  // negative tie to even
  EXPECT_EQ(round_bits(0xbf818000u), 0xbf82);
  EXPECT_EQ(round_bits(0x3fffffffu), 0x4000);  // carry into the exponent
  EXPECT_EQ(f32_to_bf16(3.140625f), 0x4049);
}

TEST(Bf16, OverflowToInfinity) {
  EXPECT_EQ(round_bits(0x7f7f7fffu), 0x7f7f);  // stays the largest finite BF16
  EXPECT_EQ(round_bits(0x7f7f8000u), 0x7f80);  // tie with odd 0x7f7f -> inf
  EXPECT_EQ(round_bits(0x7f7fffffu), 0x7f80);  // FLT_MAX -> +inf
  EXPECT_EQ(round_bits(0xff7fffffu), 0xff80);  // -FLT_MAX -> -inf
  EXPECT_EQ(round_bits(0x7f800000u), 0x7f80);  // inf stays inf
  EXPECT_EQ(round_bits(0xff800000u), 0xff80);
}

TEST(Bf16, NanStaysNan) {
  EXPECT_EQ(round_bits(0x7fc00000u), 0x7fc0);
  // Payload only in the low 16 bits: truncation would give inf.
  EXPECT_EQ(round_bits(0x7f800001u), 0x7fc0);
  EXPECT_EQ(round_bits(0xff800001u), 0xffc0);
  EXPECT_EQ(round_bits(0x7fffffffu), 0x7fff);  // must not carry into the sign
  EXPECT_EQ(round_bits(0xffffffffu), 0xffff);
  for (uint32_t u : {0x7f800001u, 0x7fbfffffu, 0x7fc00001u, 0xffc12345u}) {
    EXPECT_TRUE(std::isnan(bf16_to_f32(round_bits(u)))) << std::hex << u;
  }
}

TEST(Bf16, ZerosAndSubnormals) {
  EXPECT_EQ(round_bits(0x00000000u), 0x0000);
  EXPECT_EQ(round_bits(0x80000000u), 0x8000);
  EXPECT_EQ(round_bits(0x00000001u), 0x0000);  // smallest FP32 subnormal -> +0
  EXPECT_EQ(round_bits(0x80000001u), 0x8000);  // -> -0
  EXPECT_EQ(round_bits(0x00008000u), 0x0000);  // tie to even (0)
  EXPECT_EQ(round_bits(0x00018000u), 0x0002);  // tie to even (2)
  EXPECT_EQ(round_bits(0x00010000u), 0x0001);  // smallest BF16 subnormal
  EXPECT_EQ(round_bits(0x80008001u), 0x8001);
  EXPECT_EQ(round_bits(0x007fffffu), 0x0080);  // largest subnormal rounds to min normal
}

TEST(Bf16, RoundTripOfEveryBf16Value) {
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const float f = bf16_to_f32(static_cast<uint16_t>(b));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(f))));
    } else {
      ASSERT_EQ(f32_to_bf16(f), b);
    }
  }
}

}  // namespace
}  // namespace k3::kernels
