// KDA's short conv and silu on the device (shaders/kda_conv.comp) against
// the CPU kernel (kernels::short_conv_silu), bit for bit, on lavapipe with
// the validation layer on: K3's channels (3 x H*D from k3_reference_config,
// the config k3-synth --preset k3 writes, its conv kernel) over fewer rows
// than the carry holds and more, a small odd width over many rows, and
// edge values (zeros, subnormal taps and inputs, sums that overflow to
// +-inf and silu's NaN of -inf, NaN inputs: NaN wherever the CPU gives
// NaN, its bits not the kernel's to define). The outputs and the advanced
// carry are compared; two calls in a row check the carry continues. The
// kernel is scalar code, one order on every CPU target: no lane count to vary.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gpu/gpu_backend.h"
#include "gpu/lavapipe_device.h"
#include "kernels/bf16.h"
#include "kernels/compute_backend.h"
#include "kernels/matmul.h"
#include "kernels/short_conv.h"
#include "model/k3_geometry.h"

namespace k3 {
namespace {

using test::expect_same_bits;
using test::floats_over_exponents;
using test::shared_gpu;

std::vector<uint16_t> taps_of(const std::vector<float>& f) {
  std::vector<uint16_t> w(f.size());
  for (size_t i = 0; i < f.size(); ++i) w[i] = kernels::f32_to_bf16(f[i]);
  return w;
}

// Two calls (n1 then n2 rows) on the device and on the CPU, from the same
// carry: outputs and carries equal bit for bit.
void expect_conv_equal(const std::vector<uint16_t>& w, const std::vector<float>& carry0, const std::vector<float>& raw,
                       size_t channels, size_t K, size_t n1, const std::string& what) {
  GpuBackend& gpu = shared_gpu();
  const size_t n = raw.size() / channels;
  std::vector<float> cpu = raw, dev = raw, cpu_carry = carry0, dev_carry = carry0, next((K - 1) * channels);
  kernels::short_conv_silu(w.data(), cpu_carry.data(), cpu.data(), n1, channels, K, next.data());
  kernels::short_conv_silu(w.data(), cpu_carry.data(), cpu.data() + n1 * channels, n - n1, channels, K, next.data());
  const uint64_t runs = gpu.counters().kda_convs;
  ASSERT_TRUE(gpu.short_conv_silu(w.data(), dev_carry.data(), dev.data(), n1, channels, K)) << what;
  ASSERT_TRUE(gpu.short_conv_silu(w.data(), dev_carry.data(), dev.data() + n1 * channels, n - n1, channels, K)) << what;
  EXPECT_EQ(gpu.counters().kda_convs, runs + 2) << what;
  // A NaN's sign and payload are not the CPU kernel's to define (x86 keeps
  // one operand's NaN, and which is the compiler's choice of operand
  // order): NaN outputs must be NaN on both; every other output bit for bit.
  size_t nans = 0;
  for (size_t i = 0; i < cpu.size(); ++i)
    if (std::isnan(cpu[i])) {
      EXPECT_TRUE(std::isnan(dev[i])) << what << ": output " << i << " is NaN on the CPU only";
      dev[i] = cpu[i];
      ++nans;
    }
  expect_same_bits(cpu, dev, what + ": outputs (" + std::to_string(nans) + " NaN)");
  expect_same_bits(cpu_carry, dev_carry, what + ": carry");
}

TEST(GpuKdaConv, EqualsTheCpuKernelAtK3ChannelsBitForBit) {
  const ModelConfig k3 = k3_reference_config();
  const size_t channels = static_cast<size_t>(k3.kda_num_heads) * k3.kda_head_dim, K = k3.kda_conv_kernel;
  std::mt19937 rng(39);
  for (size_t n : {2u, 9u}) {  // the first call's rows: 1 (fewer than the carry's K-1) and 4
    const std::vector<float> taps = floats_over_exponents(rng, channels * K, -3, 1);
    expect_conv_equal(taps_of(taps), floats_over_exponents(rng, (K - 1) * channels, -6, 3),
                      floats_over_exponents(rng, n * channels, -6, 3), channels, K, n / 2,
                      "K3, " + std::to_string(n) + " rows");
  }
}

TEST(GpuKdaConv, ManyRowsOfAnOddWidthBitForBit) {
  std::mt19937 rng(7);
  const size_t channels = 37, K = 4, n = 300;
  expect_conv_equal(taps_of(floats_over_exponents(rng, channels * K, -4, 2)),
                    floats_over_exponents(rng, (K - 1) * channels, -10, 6),
                    floats_over_exponents(rng, n * channels, -10, 6), channels, K, 123, "37 channels, 300 rows");
}

TEST(GpuKdaConv, EdgeValuesBitForBit) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float sub = std::numeric_limits<float>::denorm_min(), tiny = 1e-39f;
  const size_t K = 4;
  // One channel per case: taps and the K-1 carry rows and 3 raw rows.
  struct Case {
    float tap, x;
  };
  const std::vector<Case> cases = {{0.0f, 0.0f}, {1.0f, -0.0f},  {0.0f, -5.0f},   {1.0f, tiny},   {0.5f, sub},
                                   {tiny, 3.0f}, {1e38f, 1e38f}, {-1e38f, 1e38f}, {1.0f, inf},    {1.0f, -inf},
                                   {1.0f, nan},  {2.0f, 100.0f}, {1.0f, -100.0f}, {1.0f, -88.0f}, {1.0f, 20.0f}};
  const size_t channels = cases.size(), n = 3;
  std::vector<uint16_t> w(channels * K);
  std::vector<float> carry((K - 1) * channels), raw(n * channels);
  for (size_t c = 0; c < channels; ++c) {
    for (size_t j = 0; j < K; ++j) w[c * K + j] = kernels::f32_to_bf16(j % 2 ? cases[c].tap : cases[c].tap * 0.5f);
    for (size_t r = 0; r < K - 1; ++r) carry[r * channels + c] = r == 1 ? cases[c].x : 0.25f;
    for (size_t t = 0; t < n; ++t) raw[t * channels + c] = t == 0 ? -cases[c].x : cases[c].x;
  }
  expect_conv_equal(w, carry, raw, channels, K, 1, "edge values");
}

}  // namespace
}  // namespace k3
