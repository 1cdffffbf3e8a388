// KDA's q and k normalisation on the device (shaders/kda_l2norm.comp)
// against the CPU kernel (kernels::l2_normalize), bit for bit, on lavapipe
// with the validation layer on: K3's heads (H x D from k3_reference_config,
// the config k3-synth --preset k3 writes) with q's scale 1/sqrt(D) and k's
// 1, a small odd width over many rows, and edge rows (a zero row, where
// the epsilon alone divides; subnormal rows; sums of squares that overflow
// FP32, so the row becomes zeros; inf and NaN; a row whose double sum
// differs in another order). The sum of squares is scalar
// code, one order on every CPU target: no lane count to vary.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gpu/gpu_backend.h"
#include "gpu/lavapipe_device.h"
#include "kernels/l2_normalize.h"
#include "model/k3_geometry.h"

namespace k3 {
namespace {

using test::expect_same_bits;
using test::floats_over_exponents;
using test::shared_gpu;

void expect_l2_equal(const std::vector<float>& x, size_t dim, float scale, const std::string& what) {
  GpuBackend& gpu = shared_gpu();
  std::vector<float> cpu = x, dev = x;
  for (size_t r = 0; r < x.size() / dim; ++r) kernels::l2_normalize(cpu.data() + r * dim, dim, scale);
  const uint64_t calls = gpu.counters().kda_norms;
  ASSERT_TRUE(gpu.kda_l2_normalize(dev.data(), x.size() / dim, dim, scale)) << what;
  EXPECT_EQ(gpu.counters().kda_norms, calls + 1) << what;
  expect_same_bits(cpu, dev, what);
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

TEST(GpuKdaL2Norm, EqualsTheCpuKernelAtK3HeadsBitForBit) {
  const ModelConfig k3 = k3_reference_config();
  const size_t H = k3.kda_num_heads, D = k3.kda_head_dim, tokens = 3;
  std::mt19937 rng(39);
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(D));  // model/kda.cpp's
  expect_l2_equal(floats_over_exponents(rng, tokens * H * D, -30, 20), D, q_scale, "K3 q, 3 tokens");
  expect_l2_equal(floats_over_exponents(rng, tokens * H * D, -30, 20), D, 1.0f, "K3 k, 3 tokens");
}

TEST(GpuKdaL2Norm, ManyRowsOfAnOddWidthBitForBit) {
  std::mt19937 rng(7);
  expect_l2_equal(floats_over_exponents(rng, 500 * 37, -80, 60), 37, 0.3f, "37 wide, 500 rows");
}

TEST(GpuKdaL2Norm, EdgeRowsBitForBit) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float sub = std::numeric_limits<float>::denorm_min();
  const size_t dim = 6;
  // One row per case: the value at every other index, the rest a second one.
  const std::vector<std::pair<float, float>> cases = {{0.0f, 0.0f},  {-0.0f, 0.0f}, {sub, -sub},   {1e-39f, 3e-40f},
                                                      {1e-3f, 0.0f}, {1e19f, 1.0f}, {3e38f, 1.0f}, {-1e30f, 2e30f},
                                                      {inf, 1.0f},   {nan, 1.0f},   {1.0f, 1.0f},  {5e-4f, -5e-4f}};
  std::vector<float> x(cases.size() * dim);
  for (size_t r = 0; r < cases.size(); ++r)
    for (size_t d = 0; d < dim; ++d) x[r * dim + d] = d % 2 ? cases[r].first : cases[r].second;
  expect_l2_equal(x, dim, 1.0f, "edge rows, scale 1");
  expect_l2_equal(x, dim, 0.125f, "edge rows, scale 1/8");
}

// A row whose sum of squares in double depends on its order: p^2 + q^2 is
// an FP32 tie that rounds down (to even); the four (2^-7)^2 added after it
// are each below half a double ulp and lost, but summed first they make one
// ulp and the sum rounds up, and so does 1/sqrt of it (found by search).
TEST(GpuKdaL2Norm, TheSquaresAreSummedInIndexOrder) {
  const float c = 0x1p-7f;
  expect_l2_equal({1003520.0f, 495360.0f, c, c, c, c, 0.0f, 0.0f}, 8, 1.0f, "an order-sensitive row");
}

}  // namespace
}  // namespace k3
