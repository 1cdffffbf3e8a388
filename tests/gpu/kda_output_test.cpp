// The KDA layer's output norm and gate on the device (shaders/kda_output.comp)
// against the CPU code it replaces (model/kda.cpp's finish_output:
// kernels::rms_norm of the row with o_norm, then times kernels::sigmoid of
// the gate), bit for bit, on lavapipe with the validation layer on: K3's
// heads (H x D and rms_norm_eps from k3_reference_config, the config
// k3-synth --preset k3 writes) over a few tokens, a small odd width over
// many rows, and edge values (zero rows, subnormal rows and weights,
// magnitudes whose mean of squares overflows FP32, inf and NaN in o, the
// gate saturated both ways, +-inf and NaN gates; a row whose double sum
// differs in another order). The sums of squares are
// scalar code, one order on every CPU target: no lane count to vary.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gpu/gpu_backend.h"
#include "gpu/lavapipe_device.h"
#include "kernels/activations.h"
#include "kernels/rms_norm.h"
#include "model/k3_geometry.h"

namespace k3 {
namespace {

using test::expect_same_bits;
using test::floats_over_exponents;
using test::shared_gpu;

// model/kda.cpp's finish_output, row by row, from the kernels it calls.
std::vector<float> cpu_output(std::vector<float> o, const std::vector<float>& gate, size_t dim,
                              const std::vector<float>& o_norm, float eps) {
  for (size_t r = 0; r < o.size() / dim; ++r) {
    float* row = o.data() + r * dim;
    kernels::rms_norm(row, 1, dim, o_norm.data(), eps, row);
    for (size_t d = 0; d < dim; ++d) row[d] *= kernels::sigmoid(gate[r * dim + d]);
  }
  return o;
}

void expect_output_equal(const std::vector<float>& o, const std::vector<float>& gate, size_t dim,
                         const std::vector<float>& o_norm, float eps, const std::string& what) {
  GpuBackend& gpu = shared_gpu();
  const uint64_t calls = gpu.counters().kda_outputs;
  std::vector<float> dev = o;
  ASSERT_TRUE(gpu.kda_output(dev.data(), gate.data(), o.size() / dim, dim, o_norm.data(), eps)) << what;
  EXPECT_EQ(gpu.counters().kda_outputs, calls + 1) << what;
  expect_same_bits(cpu_output(o, gate, dim, o_norm, eps), dev, what);
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

TEST(GpuKdaOutput, EqualsTheCpuAtK3HeadsBitForBit) {
  const ModelConfig k3 = k3_reference_config();
  const size_t H = k3.kda_num_heads, D = k3.kda_head_dim, tokens = 3;
  std::mt19937 rng(39);
  expect_output_equal(floats_over_exponents(rng, tokens * H * D, -20, 8),
                      floats_over_exponents(rng, tokens * H * D, -8, 5), D, floats_over_exponents(rng, D, -2, 1),
                      k3.rms_norm_eps, "K3, 3 tokens");
}

TEST(GpuKdaOutput, ManyRowsOfAnOddWidthBitForBit) {
  std::mt19937 rng(7);
  const size_t dim = 37, rows = 500;
  expect_output_equal(floats_over_exponents(rng, rows * dim, -70, 40), floats_over_exponents(rng, rows * dim, -12, 7),
                      dim, floats_over_exponents(rng, dim, -4, 2), 1e-6f, "37 wide, 500 rows");
}

TEST(GpuKdaOutput, EdgeValuesBitForBit) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float sub = std::numeric_limits<float>::denorm_min(), tiny = 1e-39f;
  const size_t dim = 8;
  // One row per case: o's value at every other index (the rest 0.5), and
  // the gate's.
  struct Case {
    float o, gate;
  };
  const std::vector<Case> cases = {{0.0f, 0.0f},    {-0.0f, 1.0f},   {tiny, 2.0f},    {sub, -3.0f},   {1e38f, 0.5f},
                                   {-3e38f, 100.f}, {2.0f, -100.0f}, {1.0f, 88.0f},   {1.0f, -88.0f}, {1.0f, 89.0f},
                                   {1.0f, -104.0f}, {1.0f, inf},     {1.0f, -inf},    {1.0f, nan},    {inf, 1.0f},
                                   {nan, 1.0f},     {1e-20f, 20.0f}, {5e-23f, -20.0f}};
  std::vector<float> o(cases.size() * dim), gate(o.size()), o_norm(dim);
  for (size_t r = 0; r < cases.size(); ++r)
    for (size_t d = 0; d < dim; ++d) {
      o[r * dim + d] = d % 2 ? cases[r].o : (cases[r].o == 0.0f ? 0.0f : 0.5f);
      gate[r * dim + d] = d % 3 ? cases[r].gate : -cases[r].gate;
    }
  for (size_t d = 0; d < dim; ++d) o_norm[d] = d == 5 ? tiny : (d == 6 ? 0.0f : 1.0f + 0.25f * d);
  expect_output_equal(o, gate, dim, o_norm, 1e-6f, "edge values");
}

// A head whose sum of squares in double depends on its order: p^2 + q^2 is
// an FP32 tie that rounds down (to even); the four (2^-7)^2 added after it
// are each below half a double ulp and lost, but summed first they make one
// ulp, and the mean (/8, exact) and its 1/sqrt round up (found by search).
TEST(GpuKdaOutput, TheSquaresAreSummedInIndexOrder) {
  const ModelConfig k3 = k3_reference_config();
  const float c = 0x1p-7f;
  expect_output_equal({1003520.0f, 495360.0f, c, c, c, c, 0.0f, 0.0f}, std::vector<float>(8, 0.5f), 8,
                      std::vector<float>(8, 1.0f), k3.rms_norm_eps, "an order-sensitive row");
}

}  // namespace
}  // namespace k3
