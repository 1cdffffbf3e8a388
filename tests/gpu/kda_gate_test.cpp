// KDA's gates on the device (shaders/kda_gate.comp) against the CPU code
// (model/kda.h's kda_gate with K3's lower bound, beta = kernels::sigmoid),
// bit for bit, on lavapipe with the validation layer on: K3's heads (H x D
// and gate_lower_bound from k3_reference_config, the config k3-synth
// --preset k3 writes) over a few tokens, and edge values (zeros,
// subnormals, the sigmoid saturated both ways, A_log large enough that
// exp overflows, +-inf and NaN); the softplus form (a config without the
// lower bound) over the same values and log1p_f32's branches (arguments
// near 0, around the reduction's bounds, 1 + x near powers of two, and
// the cut at 20). The gate is
// elementwise scalar code: no lane order.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gpu/gpu_backend.h"
#include "gpu/lavapipe_device.h"
#include "kernels/activations.h"
#include "model/k3_geometry.h"
#include "model/kda.h"

namespace k3 {
namespace {

using test::expect_same_bits_any_nan;
using test::floats_over_exponents;
using test::shared_gpu;

void expect_gates_equal(const ModelConfig& c, const std::vector<float>& graw, const std::vector<float>& beta,
                        const std::vector<float>& A_log, const std::vector<float>& dt_bias, const std::string& what) {
  GpuBackend& gpu = shared_gpu();
  const size_t H = c.kda_num_heads, D = c.kda_head_dim, tokens = beta.size() / H;
  std::vector<float> cpu_g = graw, cpu_beta = beta, dev_g = graw, dev_beta = beta;
  for (size_t i = 0; i < graw.size(); ++i) cpu_g[i] = kda_gate(c, graw[i], A_log[(i / D) % H], dt_bias[i % (H * D)]);
  for (float& b : cpu_beta) b = kernels::sigmoid(b);
  const uint64_t calls = gpu.counters().kda_gates;
  const kernels::KdaGateBound bound{c.kda_has_gate_lower_bound, c.kda_gate_lower_bound};
  ASSERT_TRUE(gpu.kda_gates(dev_g.data(), dev_beta.data(), tokens, H, D, A_log.data(), dt_bias.data(), bound)) << what;
  EXPECT_EQ(gpu.counters().kda_gates, calls + 1) << what;
  expect_same_bits_any_nan(cpu_g, dev_g, what + ": g");
  expect_same_bits_any_nan(cpu_beta, dev_beta, what + ": beta");
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// The edge values' rows, with `c`'s heads and dims.
struct EdgeRows {
  std::vector<float> graw, beta, A_log, dt_bias;
};
EdgeRows edge_rows(const std::vector<float>& values, size_t H, size_t D) {
  const float inf = std::numeric_limits<float>::infinity();
  const size_t tokens = values.size() / 2;
  EdgeRows r{std::vector<float>(tokens * H * D), std::vector<float>(tokens * H), {}, std::vector<float>(H * D)};
  for (size_t i = 0; i < r.graw.size(); ++i) r.graw[i] = values[(i * 7) % values.size()];
  for (size_t i = 0; i < r.beta.size(); ++i) r.beta[i] = values[i % values.size()];
  for (size_t i = 0; i < r.dt_bias.size(); ++i) r.dt_bias[i] = values[(i * 3) % values.size()] * 0.5f;
  // exp(A_log): 1, a subnormal's, large (exp overflows past 88.7), -inf's 0.
  r.A_log = {0.0f, std::numeric_limits<float>::denorm_min(), 90.0f, -inf};
  return r;
}

TEST(GpuKdaGate, EqualsTheCpuAtK3HeadsBitForBit) {
  const ModelConfig k3 = k3_reference_config();
  ASSERT_TRUE(k3.kda_has_gate_lower_bound);
  const size_t H = k3.kda_num_heads, D = k3.kda_head_dim, tokens = 3;
  std::mt19937 rng(39);
  expect_gates_equal(k3, floats_over_exponents(rng, tokens * H * D, -10, 4),
                     floats_over_exponents(rng, tokens * H, -6, 4), floats_over_exponents(rng, H, -4, 2),
                     floats_over_exponents(rng, H * D, -6, 1), "K3, 3 tokens");
}

TEST(GpuKdaGate, EdgeValuesBitForBit) {
  ModelConfig c = k3_reference_config();
  c.kda_num_heads = 4;
  c.kda_head_dim = 5;
  c.kda_gate_lower_bound = -0.75f;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float sub = std::numeric_limits<float>::denorm_min();
  const std::vector<float> values = {0.0f,    -0.0f, sub,    -1e-39f, 1e-30f, 17.0f, -17.0f, 88.0f, -88.0f, 89.0f,
                                     -104.0f, 200.f, -200.f, 3e38f,   -3e38f, inf,   -inf,   nan,   1.0f,   -1.0f};
  const EdgeRows r = edge_rows(values, 4, 5);
  expect_gates_equal(c, r.graw, r.beta, r.A_log, r.dt_bias, "edge values");
}

TEST(GpuKdaGate, TheSoftplusFormBitForBit) {
  ModelConfig c = k3_reference_config();
  c.kda_has_gate_lower_bound = false;
  c.kda_num_heads = 4;
  c.kda_head_dim = 16;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  // Arguments of log1p_f32 (exp of graw + dt_bias, dt_bias 0 on even
  // values) in each of its branches: below 2^-54 and 2^-29, the unreduced
  // range, the reduced one (1 + x rounded, corrected by c), f zero (x = 1,
  // 3) and just below a power of two (1 + x ~ 4 - 2^-22), the softplus
  // cut at 20.
  std::vector<float> values = {
      0.0f,  -0.0f, 1e-30f,  -45.0f,  -20.0f, -0.35f,     -0.3f,      0.34f,      0.35f,    0.7f,      1.0f,   5.0f,
      19.9f, 20.0f, 20.5f,   37.0f,   40.0f,  88.0f,      89.0f,      -88.0f,     -104.f,   3e38f,     -3e38f, inf,
      -inf,  nan,   0.0625f, -1e-8f,  1e-7f,  0.4142f,    -0.29f,     0.6931f,    1.386f,   2.0794f,   9.0f,   -9.0f,
      14.0f, -2.5f, 1e-20f,  -1e-36f, -21.0f, 1.0986123f, 1.0986122f, 1.9459101f, 1.94591f, 0.6931472f};
  std::mt19937 rng(11);
  for (float v : floats_over_exponents(rng, 88, -30, 6)) values.push_back(v);
  const EdgeRows r = edge_rows(values, 4, 16);
  std::vector<float> dt_bias(r.dt_bias.size());
  for (size_t i = 0; i < dt_bias.size(); ++i) dt_bias[i] = i % 2 ? r.dt_bias[i] : 0.0f;
  expect_gates_equal(c, r.graw, r.beta, {0.0f, -0.5f, 0.3f, 1.0f}, dt_bias, "softplus, one A_log");
  expect_gates_equal(c, r.graw, r.beta, r.A_log, r.dt_bias, "softplus, edge A_log");
}

}  // namespace
}  // namespace k3
