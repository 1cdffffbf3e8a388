// kernels::log1p_f32 (k3's own log(1 + x), KDA's softplus gate) against
// libm's log1pf: every sampled float above -1 within one ULP of it, nearly
// all equal, and the special values follow log1pf's.
#include "kernels/log1p_f32.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/float_sweep.h"

namespace k3::kernels {
namespace {

TEST(Log1pF32, WithinOneUlpOfLibmOverTheWholeRange) {
  // Every 251st float bit pattern above -1: both signs, every exponent,
  // subnormals, up to FLT_MAX (softplus gives it exp(x) in (0, e^20]).
  const test::FloatSweep s =
      test::sweep_floats([](float x) { return x > -1.0f && !std::isinf(x); }, [](float x) { return std::log1p(x); },
                         [](float x) { return log1p_f32(x); });
  EXPECT_GT(s.tested, 10000000u);
  EXPECT_LE(s.worst_ulps, 1) << "ULPs from libm's log1pf";
  EXPECT_GT(static_cast<double>(s.equal) / s.tested, 0.999) << s.equal << " of " << s.tested << " equal libm's";
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
