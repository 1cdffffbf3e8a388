// kernels::attn_res_mix on the device (shaders/attn_res_mix.comp) against
// the CPU kernel, bit for bit, on lavapipe with the validation layer on:
// K3's hidden size with the most values a mix gets there (every block state
// a pass closes and the partial sum, from k3_reference_config, the config
// k3-synth --preset k3 writes), small and odd widths, and edge rows (zero
// values, subnormals, values whose mean of squares overflows, inf, key
// weights so large that the softmax underflows to one-hot or its scores
// overflow to inf - inf). The kernel is scalar code compiled without
// contraction, the same order on every CPU target, so there is no lane count
// to vary.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gpu/gpu.h"
#include "gpu/gpu_backend.h"
#include "gpu/lavapipe_device.h"
#include "kernels/attn_res.h"
#include "kernels/compute_backend.h"
#include "kernels/matmul.h"
#include "model/forward_scratch.h"
#include "model/k3_geometry.h"

namespace k3 {
namespace {

using test::expect_same_bits;
using test::floats_over_exponents;
using test::open_lavapipe_device;
using test::shared_gpu;

// The BF16 bits of each float (its top half).
std::vector<uint16_t> bf16_of(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t b;
    std::memcpy(&b, &v[i], 4);
    out[i] = static_cast<uint16_t>(b >> 16);
  }
  return out;
}

// One mix's inputs: `blocks` block states and p, each [n, hidden].
struct Mix {
  size_t n, hidden;
  std::vector<std::vector<float>> blocks;
  std::vector<float> p, norm;
  std::vector<uint16_t> proj;
  std::vector<const float*> block_ptrs() const {
    std::vector<const float*> b;
    for (const auto& s : blocks) b.push_back(s.data());
    return b;
  }
};

Mix random_mix(std::mt19937& rng, size_t n, size_t hidden, size_t blocks, int lo, int hi) {
  Mix m{n, hidden, {}, floats_over_exponents(rng, n * hidden, lo, hi), floats_over_exponents(rng, hidden, -1, 1), {}};
  for (size_t j = 0; j < blocks; ++j) m.blocks.push_back(floats_over_exponents(rng, n * hidden, lo, hi));
  // Key weights of about 1/sqrt(hidden): scores of a few units, a softmax
  // that weighs several values.
  m.proj = bf16_of(floats_over_exponents(rng, hidden, -2 - static_cast<int>(std::log2(hidden)) / 2, 0));
  return m;
}

std::vector<float> on_cpu(const Mix& m, float eps) {
  std::vector<float> out(m.n * m.hidden);
  kernels::attn_res_mix(m.block_ptrs(), m.p.data(), m.n, m.hidden, m.proj.data(), m.norm.data(), eps, out.data());
  return out;
}

std::vector<float> on_gpu(GpuBackend& gpu, const Mix& m, float eps) {
  std::vector<float> out(m.n * m.hidden, -1.0f);
  const std::vector<const float*> b = m.block_ptrs();
  EXPECT_TRUE(
      gpu.attn_res_mix(b.data(), b.size(), m.p.data(), m.n, m.hidden, m.proj.data(), m.norm.data(), eps, out.data()));
  return out;
}

TEST(AttnResMix, EqualsTheCpuKernelAtK3ShapeBitForBit) {
  const ModelConfig k3 = k3_reference_config();
  GpuBackend& gpu = shared_gpu();
  const uint64_t calls = gpu.counters().attn_res_mixes;
  std::mt19937 rng(39);
  // The most block states a K3 mix gets (the head's, and the last layers').
  const size_t blocks = residual_block_count(k3), hidden = static_cast<size_t>(k3.hidden_size);
  ASSERT_GT(blocks, 4u);
  const Mix m = random_mix(rng, 3, hidden, blocks, -8, 8);
  const auto want = on_cpu(m, k3.rms_norm_eps);
  expect_same_bits(want, on_gpu(gpu, m, k3.rms_norm_eps), "K3: hidden " + std::to_string(hidden));
  // The mix is not one-hot: the output is no single value row.
  EXPECT_NE(std::memcmp(want.data(), m.p.data(), hidden * 4), 0);
  EXPECT_EQ(gpu.counters().attn_res_mixes - calls, 1u);
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

TEST(AttnResMix, EqualsTheCpuKernelOnRandomShapes) {
  GpuBackend& gpu = shared_gpu();
  std::mt19937 rng(7);
  struct Case {
    size_t n, hidden, blocks;
  };
  // The tiny model's width, odd widths (a BF16 pair half used), no block
  // state (p alone), rows beyond one workgroup's invocations.
  for (const Case& c : {Case{70, 64, 4}, Case{5, 37, 2}, Case{3, 1, 3}, Case{4, 12, 0}, Case{2, 129, 9}}) {
    const std::string what =
        "n " + std::to_string(c.n) + " hidden " + std::to_string(c.hidden) + " blocks " + std::to_string(c.blocks);
    const Mix m = random_mix(rng, c.n, c.hidden, c.blocks, -20, 20);
    expect_same_bits(on_cpu(m, 1e-5f), on_gpu(gpu, m, 1e-5f), what);
  }
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// Edge rows, one per row of a 3-value mix (two block states and p):
//  0  p all zeros (its scale 1/sqrt(eps), its score 0), signed zeros
//  1  every value subnormal (squares far below FP32's least normal)
//  2  one value with 3e38 (its mean of squares overflows: scaled by 0)
//  3  one value with -inf (inf * 0: the CPU's default NaN, NaN throughout)
//  4  random values
// with the random key weights, then with key weights ~2^40 (scores ~2^40
// apart: the softmax underflows to one-hot) and +-3e38 (scores overflow to
// +-inf, inf - inf is NaN).
TEST(AttnResMix, EdgeRowsEqualTheCpuKernel) {
  GpuBackend& gpu = shared_gpu();
  const size_t hidden = 33, n = 5;
  std::mt19937 rng(5);
  Mix m = random_mix(rng, n, hidden, 2, -3, 3);
  for (size_t c = 0; c < hidden; ++c) {
    m.p[0 * hidden + c] = c % 2 ? 0.0f : -0.0f;
    for (auto* v : {&m.blocks[0], &m.blocks[1], &m.p}) (*v)[1 * hidden + c] = std::ldexp(static_cast<float>(c), -149);
  }
  m.blocks[1][2 * hidden + 5] = 3e38f;
  m.blocks[0][3 * hidden + 9] = -std::numeric_limits<float>::infinity();
  for (float eps : {1e-5f, std::ldexp(1.0f, -140)}) {
    SCOPED_TRACE("eps " + std::to_string(eps));
    const auto want = on_cpu(m, eps);
    expect_same_bits(want, on_gpu(gpu, m, eps), "edge rows");
    EXPECT_TRUE(std::isnan(want[3 * hidden])) << "the row with inf is NaN";
  }
  {
    Mix big = m;
    for (float& w : big.norm) w = std::ldexp(w, 40);
    const auto want = on_cpu(big, 1e-5f);
    expect_same_bits(want, on_gpu(gpu, big, 1e-5f), "key weights 2^40");
    bool one_hot = false;  // row 4 is one of its values' rows exactly
    for (const auto* v : {&big.blocks[0], &big.blocks[1], &big.p})
      if (std::memcmp(want.data() + 4 * hidden, v->data() + 4 * hidden, hidden * 4) == 0) one_hot = true;
    EXPECT_TRUE(one_hot) << "a softmax of scores 2^40 apart takes one value";
  }
  {
    Mix huge = m;
    for (size_t c = 0; c < hidden; ++c) {
      huge.norm[c] = c % 3 ? 3e38f : -3e38f;
      huge.proj[c] = 0x3f80;  // 1.0
    }
    const auto want = on_cpu(huge, 1e-5f);
    expect_same_bits(want, on_gpu(gpu, huge, 1e-5f), "key weights 3e38");
    EXPECT_TRUE(std::isnan(want[4 * hidden])) << "scores of +-inf: inf - inf";
  }
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// Through the seam: attn_res_mix_on_backend runs on the installed backend
// (its count rises) with the CPU's bits, and on the CPU without one; the
// device memory it holds is the formula's (gpu_attn_res_words).
TEST(AttnResMix, RunsThroughTheSeamWithinTheFormula) {
  GpuBackend gpu(open_lavapipe_device(), kernels::kernel_target_lanes() >= 16 ? 16 : 8, false);
  ASSERT_EQ(gpu.peak_bytes(), 0u);
  std::mt19937 rng(11);
  const Mix m = random_mix(rng, 9, 48, 3, -4, 4);
  std::vector<float> out(m.n * m.hidden);
  {
    kernels::ScopedComputeBackend on(&gpu);
    kernels::attn_res_mix_on_backend(m.block_ptrs(), m.p.data(), m.n, m.hidden, m.proj.data(), m.norm.data(), 1e-5f,
                                     out.data());
  }
  EXPECT_EQ(gpu.counters().attn_res_mixes, 1u);
  expect_same_bits(on_cpu(m, 1e-5f), out, "through the seam");
  // The two activation buffers, all the device holds.
  const GpuAttnResWords words = gpu_attn_res_words(4, 48, 9);
  EXPECT_EQ(words.in, 48 + 24 + 4 * 9 * 48u);
  EXPECT_EQ(words.out, 9 * 48 + 9 * 4u);
  EXPECT_EQ(gpu.peak_bytes(), 4 * (words.in + words.out));
  std::vector<float> cpu(m.n * m.hidden);
  kernels::attn_res_mix_on_backend(m.block_ptrs(), m.p.data(), m.n, m.hidden, m.proj.data(), m.norm.data(), 1e-5f,
                                   cpu.data());
  EXPECT_EQ(gpu.counters().attn_res_mixes, 1u) << "no backend installed: the CPU ran it";
  expect_same_bits(out, cpu, "the CPU without a backend");
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// The plan's part for the mixes: only what their buffers need beyond the
// products' activations, each buffer grown to the larger need.
TEST(AttnResMix, PlanCountsWhatTheMixesAddToTheProducts) {
  GpuProductBound products;
  products.weight_bytes = 1 << 20;
  products.cols = 100;
  products.rows = 1000;
  // Values of 64 x 5 = 320 floats a row against the products' 100 in: the
  // inputs grow by the difference; the outputs (64 + 5) fit the products' 1000.
  const GpuAttnResWords w = gpu_attn_res_words(5, 64, 30);
  EXPECT_EQ(gpu_attn_res_device_bytes(products, 30, 5, 64, 30), w.in * 4 - 30 * 100 * 4);
  // Mixes of fewer rows than the products: nothing beyond them.
  EXPECT_EQ(gpu_attn_res_device_bytes(products, 300, 5, 64, 30), 0u);
  // Without products, all of both buffers.
  EXPECT_EQ(gpu_attn_res_device_bytes(GpuProductBound{}, 30, 5, 64, 30), 4 * (w.in + w.out));
  EXPECT_EQ(gpu_attn_res_device_bytes(products, 30, 5, 64, 0), 0u);
}

}  // namespace
}  // namespace k3
