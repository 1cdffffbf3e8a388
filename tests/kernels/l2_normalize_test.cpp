// KDA's l2normalize: the epsilon inside the square root, the scale applied
// after, the sum of squares independent of anything but the row.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/l2_normalize.h"

namespace k3::kernels {
namespace {

TEST(L2Normalize, UnitLengthTimesScale) {
  std::vector<float> x = {3, 4};  // sum of squares 25: inv = 1 / sqrt(25 + 1e-6)
  l2_normalize(x.data(), x.size(), 2.0f);
  const float inv = 1.0f / std::sqrt(25.0f + 1e-6f);
  EXPECT_EQ(x[0], 3 * inv * 2.0f);
  EXPECT_EQ(x[1], 4 * inv * 2.0f);
  EXPECT_NEAR(std::hypot(x[0], x[1]), 2.0, 1e-6);
}

TEST(L2Normalize, ZeroStaysZeroAndTheEpsilonIsInsideTheRoot) {
  std::vector<float> z(8, 0.0f);
  l2_normalize(z.data(), z.size(), 1.0f);
  for (float v : z) EXPECT_EQ(v, 0.0f);
  // A tiny row is not blown up to unit length: 1e-4 / sqrt(1e-8 + 1e-6).
  std::vector<float> t = {1e-4f};
  l2_normalize(t.data(), 1, 1.0f);
  EXPECT_NEAR(t[0], 1e-4 / std::sqrt(1e-8 + 1e-6), 1e-4);
  EXPECT_LT(t[0], 0.2f);
}

}  // namespace
}  // namespace k3::kernels
