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

#include "kernels/float_sweep.h"

namespace k3::kernels {
namespace {

TEST(ExpF32, WithinOneUlpOfLibmOverTheWholeRange) {
  // Every 251st float bit pattern from -104 to +89: both signs, every
  // exponent, subnormal results at the bottom.
  const test::FloatSweep s =
      test::sweep_floats([](float x) { return x > -104.0f && x < 89.0f; }, [](float x) { return std::exp(x); },
                         [](float x) { return exp_f32(x); });
  EXPECT_GT(s.tested, 8000000u);
  EXPECT_LE(s.worst_ulps, 1) << "ULPs from libm's expf";
  EXPECT_GT(static_cast<double>(s.equal) / s.tested, 0.999) << s.equal << " of " << s.tested << " equal libm's";
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
