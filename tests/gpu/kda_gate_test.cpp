// KDA's gates on the device (shaders/kda_gate.comp) against the CPU code
// (model/kda.h's kda_gate with K3's lower bound, beta = kernels::sigmoid),
// bit for bit, on lavapipe with the validation layer on: K3's heads (H x D
// and gate_lower_bound from k3_reference_config, the config k3-synth
// --preset k3 writes) over a few tokens, and edge values (zeros,
// subnormals, the sigmoid saturated both ways, A_log large enough that
// exp overflows, +-inf and NaN). The gate is elementwise scalar code: no
// lane order. A config without the lower bound (the softplus form) is left
// to the CPU: checked to be declined.
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

using test::expect_same_bits;
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
  expect_same_bits(cpu_g, dev_g, what + ": g");
  expect_same_bits(cpu_beta, dev_beta, what + ": beta");
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
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
  const size_t H = 4, D = 5, tokens = values.size() / 2;
  std::vector<float> graw(tokens * H * D), beta(tokens * H), dt_bias(H * D);
  for (size_t i = 0; i < graw.size(); ++i) graw[i] = values[(i * 7) % values.size()];
  for (size_t i = 0; i < beta.size(); ++i) beta[i] = values[i % values.size()];
  for (size_t i = 0; i < dt_bias.size(); ++i) dt_bias[i] = values[(i * 3) % values.size()] * 0.5f;
  // exp(A_log): 1, a subnormal's, large (exp overflows past 88.7), -inf's 0.
  const std::vector<float> A_log = {0.0f, sub, 90.0f, -inf};
  expect_gates_equal(c, graw, beta, A_log, dt_bias, "edge values");
}

TEST(GpuKdaGate, TheSoftplusFormIsLeftToTheCpu) {
  GpuBackend& gpu = shared_gpu();
  std::vector<float> g(8, 1.0f), beta(2, 0.0f), A_log(2, 0.0f), dt_bias(8, 0.0f);
  const uint64_t calls = gpu.counters().kda_gates;
  EXPECT_FALSE(gpu.kda_gates(g.data(), beta.data(), 1, 2, 4, A_log.data(), dt_bias.data(), kernels::KdaGateBound{}));
  EXPECT_EQ(gpu.counters().kda_gates, calls);
  EXPECT_EQ(g, std::vector<float>(8, 1.0f));
}

}  // namespace
}  // namespace k3
