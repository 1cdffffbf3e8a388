// The one convention for speed figures (common/rate_format.h): three
// significant digits, fixed point, seconds per generated token and tokens
// per second, and a dash where nothing was measured.
#include <gtest/gtest.h>

#include <cmath>

#include "common/rate_format.h"

namespace k3 {
namespace {

TEST(RateFormat, ThreeSignificantDigitsWithoutExponent) {
  EXPECT_EQ(three_digits(13.66), "13.7");
  EXPECT_EQ(three_digits(0.125), "0.125");
  EXPECT_EQ(three_digits(0.0012345), "0.00123");
  EXPECT_EQ(three_digits(512.4), "512");
  EXPECT_EQ(three_digits(1234.0), "1234");
  EXPECT_EQ(three_digits(2.5), "2.50");
  EXPECT_EQ(three_digits(0.0), "0");
  EXPECT_EQ(three_digits(-1.0), "0");
  EXPECT_EQ(three_digits(std::nan("")), "0");
}

TEST(RateFormat, SecondsPerGeneratedToken) {
  // 27.32 s for 2 tokens is 13.7 s/token wherever it is printed.
  EXPECT_EQ(seconds_per_token(27.32, 2), "13.7 s/token");
  EXPECT_EQ(seconds_per_token(9.69, 64), "0.151 s/token");
  EXPECT_EQ(seconds_per_token(1.0, 0), "- s/token");
}

TEST(RateFormat, PromptTokensPerSecond) {
  EXPECT_EQ(tokens_per_second(1.45, 7), "4.83 tokens/s");
  EXPECT_EQ(tokens_per_second(0.0, 7), "- tokens/s");
}

}  // namespace
}  // namespace k3
