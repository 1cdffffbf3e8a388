// kernels::log1p_f32 (k3's own log(1 + x), KDA's softplus gate) against
// libm's log1pf: every sampled float above -1 within one ULP of it, nearly
// all equal, and the special values follow log1pf's.
#include "kernels/log1p_f32.h"

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

TEST(Log1pF32, WithinOneUlpOfLibmOverTheWholeRange) {
  size_t tested = 0, equal = 0;
  int64_t worst = 0;
  // Every 251st float bit pattern above -1: both signs, every exponent,
  // subnormals, up to FLT_MAX (softplus gives it exp(x) in (0, e^20]).
  for (uint64_t b = 0; b < 0x100000000ull; b += 251) {
    float x;
    const uint32_t bits = static_cast<uint32_t>(b);
    std::memcpy(&x, &bits, sizeof x);
    if (!(x > -1.0f) || std::isinf(x)) continue;
    const float want = std::log1p(x), got = log1p_f32(x);
    const int64_t d = std::llabs(ordered(want) - ordered(got));
    worst = std::max(worst, d);
    equal += d == 0;
    ++tested;
  }
  EXPECT_GT(tested, 10000000u);
  EXPECT_LE(worst, 1) << "ULPs from libm's log1pf";
  EXPECT_GT(static_cast<double>(equal) / tested, 0.999) << equal << " of " << tested << " equal libm's";
}

TEST(Log1pF32, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(log1p_f32(0.0f), 0.0f);
  EXPECT_TRUE(std::signbit(log1p_f32(-0.0f)));
  EXPECT_EQ(log1p_f32(1.0f), 0.693147182f);  // ln 2 rounded to FP32
  EXPECT_EQ(log1p_f32(-1.0f), -inf);
  EXPECT_TRUE(std::isnan(log1p_f32(-2.0f)));
  EXPECT_TRUE(std::isnan(log1p_f32(-inf)));
  EXPECT_EQ(log1p_f32(inf), inf);
  EXPECT_TRUE(std::isnan(log1p_f32(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(log1p_f32(1e-30f), 1e-30f);  // below 2^-54: x itself
  EXPECT_EQ(log1p_f32(std::numeric_limits<float>::denorm_min()), std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(log1p_f32(3e-9f), std::log1p(3e-9f));                      // x - x^2/2
  EXPECT_EQ(log1p_f32(std::exp(20.0f)), std::log1p(std::exp(20.0f)));  // softplus's largest argument
  EXPECT_EQ(log1p_f32(std::numeric_limits<float>::max()), std::log1p(std::numeric_limits<float>::max()));
}

}  // namespace
}  // namespace k3::kernels
