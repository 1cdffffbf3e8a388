// kernels::rms_norm on the device (shaders/rms_norm.comp) against the CPU
// kernel, bit for bit, on lavapipe with the validation layer on: K3's
// widths (the hidden size and the latent MoE width of k3_reference_config,
// the config k3-synth --preset k3 writes) and edge rows (zeros, subnormals,
// magnitudes whose mean of squares overflows FP32, inf, NaN). The kernel is
// scalar code, the same order on every CPU target, so there is no lane
// count to vary.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gpu/gpu_backend.h"
#include "gpu/lavapipe_device.h"
#include "kernels/compute_backend.h"
#include "kernels/matmul.h"
#include "kernels/rms_norm.h"
#include "model/k3_geometry.h"

namespace k3 {
namespace {

using test::expect_same_bits;
using test::open_lavapipe_device;
using test::shared_gpu;

// Rows over a wide range of exponents (row r scaled by 2^(scale_exp)),
// so means, square roots and reciprocals meet many roundings.
std::vector<float> rows_of(std::mt19937& rng, size_t n, size_t dim, int lo, int hi) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> e(lo, hi);
  std::vector<float> v(n * dim);
  for (size_t t = 0; t < n; ++t) {
    const int row_exp = e(rng);
    for (size_t c = 0; c < dim; ++c) v[t * dim + c] = std::ldexp(u(rng), row_exp + e(rng) / 8);
  }
  return v;
}

std::vector<float> cpu_norm(const std::vector<float>& x, size_t n, size_t dim, const std::vector<float>& w, float eps) {
  std::vector<float> out(n * dim);
  kernels::rms_norm(x.data(), n, dim, w.data(), eps, out.data());
  return out;
}

TEST(GpuRmsNorm, EqualsTheCpuKernelAtK3WidthsBitForBit) {
  const ModelConfig k3 = k3_reference_config();
  GpuBackend& gpu = shared_gpu();
  const uint64_t calls = gpu.counters().rms_norms;
  std::mt19937 rng(39);
  struct Case {
    size_t dim, n;
    int lo, hi;
  };
  const Case cases[] = {{static_cast<size_t>(k3.hidden_size), 12, -30, 30},
                        {static_cast<size_t>(k3.routed_expert_hidden_size), 9, -60, 60},
                        {100, 67, -140, 60},  // rows down to subnormals
                        {5, 40, -20, 20},
                        {1, 3, -5, 5}};
  for (const Case& c : cases) {
    const std::string what = "dim " + std::to_string(c.dim) + " n " + std::to_string(c.n);
    const auto x = rows_of(rng, c.n, c.dim, c.lo, c.hi);
    const auto w = rows_of(rng, 1, c.dim, -2, 2);
    std::vector<float> out(c.n * c.dim, -1.0f);
    ASSERT_TRUE(gpu.rms_norm(x.data(), c.n, c.dim, w.data(), k3.rms_norm_eps, out.data()));
    expect_same_bits(cpu_norm(x, c.n, c.dim, w, k3.rms_norm_eps), out, what);
  }
  EXPECT_EQ(gpu.counters().rms_norms - calls, 5u);
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// Rows at the edges: all zeros (the scale is 1/sqrt(eps)), a subnormal FP32
// mean, all subnormal inputs, one huge value (the mean overflows FP32 to inf:
// the scale is 0), one inf (inf * 0: the CPU's default NaN), one NaN (NaN
// throughout); the output written in place, as the chunk's latent norm does.
TEST(GpuRmsNorm, EdgeRowsEqualTheCpuKernel) {
  GpuBackend& gpu = shared_gpu();
  const size_t dim = 37;
  std::mt19937 rng(5);
  std::vector<float> x = rows_of(rng, 6, dim, -3, 3);
  const auto w = rows_of(rng, 1, dim, -1, 1);
  for (size_t c = 0; c < dim; ++c) {
    x[0 * dim + c] = c % 2 ? 0.0f : -0.0f;
    x[1 * dim + c] = std::ldexp(static_cast<float>(c + 1), -75);  // squares near FP32's least normal
    x[5 * dim + c] = std::ldexp(static_cast<float>(c + 1), -149);
  }
  x[2 * dim + 3] = 3e38f;
  x[3 * dim + 7] = -std::numeric_limits<float>::infinity();
  x[4 * dim + 11] = std::numeric_limits<float>::quiet_NaN();
  for (float eps : {1e-5f, 1e-6f, std::ldexp(1.0f, -140)}) {
    SCOPED_TRACE("eps " + std::to_string(eps));
    const auto want = cpu_norm(x, 6, dim, w, eps);
    std::vector<float> inplace = x;
    ASSERT_TRUE(gpu.rms_norm(inplace.data(), 6, dim, w.data(), eps, inplace.data()));
    expect_same_bits(want, inplace, "edge rows");
    EXPECT_TRUE(std::isnan(want[3 * dim + 7]) && std::isnan(want[4 * dim])) << "the values meant to be NaN are";
    EXPECT_EQ(want[2 * dim], 0.0f) << "the row whose mean overflows is scaled by 0";
  }
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// Through the seam: rms_norm_on_backend runs on the installed backend (its
// count rises) with the CPU's bits, and on the CPU without one. The norm
// keeps to the product buffers: after a product as wide over as many rows,
// the device's peak does not move.
TEST(GpuRmsNorm, RunsThroughTheSeamWithinTheProductsPeak) {
  // Its own device: the peak must be this test's product's.
  GpuBackend gpu(open_lavapipe_device(), kernels::kernel_target_lanes() >= 16 ? 16 : 8, false);
  std::mt19937 rng(11);
  const size_t dim = 256, n = 7;
  const auto x = rows_of(rng, n, dim, -4, 4);
  const auto w = rows_of(rng, 1, dim, -1, 1);
  std::vector<uint16_t> weights(dim * dim, 0x3f80);  // BF16 1.0
  std::vector<float> y(n * dim);
  ASSERT_TRUE(gpu.bf16(weights.data(), dim, dim, x.data(), n, y.data()));
  const uint64_t peak = gpu.peak_bytes();
  std::vector<float> out(n * dim);
  {
    kernels::ScopedComputeBackend on(&gpu);
    kernels::rms_norm_on_backend(x.data(), n, dim, w.data(), 1e-5f, out.data(), nullptr);
  }
  EXPECT_EQ(gpu.counters().rms_norms, 1u);
  EXPECT_EQ(gpu.peak_bytes(), peak);
  expect_same_bits(cpu_norm(x, n, dim, w, 1e-5f), out, "through the seam");
  std::vector<float> cpu(n * dim);
  kernels::rms_norm_on_backend(x.data(), n, dim, w.data(), 1e-5f, cpu.data(), nullptr);
  EXPECT_EQ(gpu.counters().rms_norms, 1u) << "no backend installed: the CPU ran it";
  expect_same_bits(out, cpu, "the CPU without a backend");
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// Where the device stages into device-local memory (a discrete GPU without
// host-visible device-local memory; forced on lavapipe), the norm reads and
// writes device-local twins, copied in and out by its command buffer: the
// CPU's bits at K3's widths and on the edge rows, in place, and the rows,
// both ways, and the weight copied exactly once a call.
TEST(GpuRmsNorm, DeviceLocalTwinsEqualTheCpuKernel) {
  setenv("K3_GPU_DEVICE_LOCAL_STAGING", "1", 1);
  GpuBackend gpu(open_lavapipe_device(), kernels::kernel_target_lanes() >= 16 ? 16 : 8, false);
  unsetenv("K3_GPU_DEVICE_LOCAL_STAGING");
  ASSERT_TRUE(gpu.counters().device_local_staging);
  const ModelConfig k3 = k3_reference_config();
  std::mt19937 rng(47);
  uint64_t copied = 0;
  for (const size_t dim : {static_cast<size_t>(k3.hidden_size), size_t{100}, size_t{5}}) {
    const size_t n = 7;
    const auto x = rows_of(rng, n, dim, -140, 60);
    const auto w = rows_of(rng, 1, dim, -2, 2);
    std::vector<float> out = x;
    ASSERT_TRUE(gpu.rms_norm(out.data(), n, dim, w.data(), k3.rms_norm_eps, out.data()));
    expect_same_bits(cpu_norm(x, n, dim, w, k3.rms_norm_eps), out, "twins, dim " + std::to_string(dim));
    copied += (2 * n * dim + dim) * sizeof(float);
    EXPECT_EQ(gpu.counters().row_twin_bytes, copied) << "dim " << dim;
  }
  std::vector<float> x = rows_of(rng, 3, 37, -3, 3);
  const auto w = rows_of(rng, 1, 37, -1, 1);
  for (size_t c = 0; c < 37; ++c) x[c] = std::ldexp(static_cast<float>(c + 1), -149);
  x[37 + 4] = std::numeric_limits<float>::infinity();
  std::vector<float> out(x.size(), -1.0f);
  ASSERT_TRUE(gpu.rms_norm(x.data(), 3, 37, w.data(), 1e-6f, out.data()));
  expect_same_bits(cpu_norm(x, 3, 37, w, 1e-6f), out, "twins, edge rows");
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

}  // namespace
}  // namespace k3
