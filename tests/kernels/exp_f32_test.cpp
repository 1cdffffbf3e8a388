// kernels::exp_f32 (k3's own e^x, the softmax's in MLA attention) against
// libm's expf, which is accurate to 0.502 ULP: every sampled float in the
// range that does not overflow or vanish is within one ULP of it, nearly all
// equal, and the special values follow expf's.
#include "kernels/exp_f32.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace k3::kernels {
namespace {

int64_t ordered(float v) {
  int32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b < 0 ? -static_cast<int64_t>(b & 0x7fffffff) : b;
}

TEST(ExpF32, WithinOneUlpOfLibmOverTheWholeRange) {
  size_t tested = 0, equal = 0;
  int64_t worst = 0;
  // Every 251st float bit pattern from -104 to +89: both signs, every
  // exponent, subnormal results at the bottom.
  for (uint64_t b = 0; b < 0x100000000ull; b += 251) {
    float x;
    const uint32_t bits = static_cast<uint32_t>(b);
    std::memcpy(&x, &bits, sizeof x);
    if (!(x > -104.0f && x < 89.0f)) continue;
    const float want = std::exp(x), got = exp_f32(x);
    const int64_t d = std::llabs(ordered(want) - ordered(got));
    worst = std::max(worst, d);
    equal += d == 0;
    ++tested;
  }
  EXPECT_GT(tested, 8000000u);
  EXPECT_LE(worst, 1) << "ULPs from libm's expf";
  EXPECT_GT(static_cast<double>(equal) / tested, 0.999) << equal << " of " << tested << " equal libm's";
}

TEST(ExpF32, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(exp_f32(0.0f), 1.0f);
  EXPECT_EQ(exp_f32(-0.0f), 1.0f);
  EXPECT_EQ(exp_f32(1.0f), 2.71828175f);  // e rounded to FP32
  EXPECT_EQ(exp_f32(-inf), 0.0f);
  EXPECT_FALSE(std::signbit(exp_f32(-inf)));
  EXPECT_EQ(exp_f32(inf), inf);
  EXPECT_EQ(exp_f32(88.8f), inf);
  EXPECT_EQ(exp_f32(88.72f), std::exp(88.72f));
  EXPECT_EQ(exp_f32(-104.0f), 0.0f);
  EXPECT_EQ(exp_f32(-103.0f), std::exp(-103.0f));  // a subnormal result
  EXPECT_GT(exp_f32(-103.0f), 0.0f);
  EXPECT_TRUE(std::isnan(exp_f32(std::numeric_limits<float>::quiet_NaN())));
}

}  // namespace
}  // namespace k3::kernels
