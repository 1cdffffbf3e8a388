// The SiTU step on the device (shaders/situ.comp) against the CPU's
// kernels::situ_span, bit for bit, on lavapipe with the validation layer on:
// every x86 target with FMA this CPU runs (AVX2 and, where present,
// AVX-512: the ones GpuBackend follows) gives the same bits as the device, at
// K3's widths and betas (k3_reference_config, the config k3-synth --preset
// k3 writes) and at the edges of Highway's Exp and Tanh (|x| past Tanh's
// limit, g past Exp's -104 clamp, subnormals, zeros, infinities, NaN).
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
#include "kernels/situ.h"
#include "lib/simd_targets.h"
#include "model/k3_geometry.h"
#include "model/situ_mlp.h"

namespace k3 {
namespace {

using test::expect_same_bits;
using test::shared_gpu;

// Values from 2^-30 to 2^8 of both signs (the gates' and ups' range and
// past it), some exactly at the thresholds.
std::vector<float> values(std::mt19937& rng, size_t count) {
  std::uniform_real_distribution<float> m(0.5f, 1.0f);
  std::uniform_int_distribution<int> e(-30, 8);
  std::vector<float> v(count);
  for (float& f : v) f = std::ldexp(rng() % 2 ? m(rng) : -m(rng), e(rng));
  return v;
}

// The edges: Exp's clamp at -104, Tanh's limit (18.714973875 on |x| / beta),
// its switch to the polynomial below ln 2 / 2, subnormals, zeros, infinities.
std::vector<float> edge_values() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {0.0f,    -0.0f,  1e-45f, -1e-45f,    1e-38f,      104.0f,     -104.0f,   104.5f,
                          -104.5f, 88.7f,  -88.7f, 74.859894f, -74.859894f, 467.87436f, 1.386294f, -1.386294f,
                          1e30f,   -1e30f, 3e38f,  -3e38f,     inf,         -inf};
  for (float f : {std::nextafter(-104.0f, 0.0f), std::nextafter(-104.0f, -200.0f), std::nextafter(74.859894f, 0.0f)})
    v.push_back(f);
  return v;
}

std::vector<float> cpu_step(std::vector<float> g, const std::vector<float>& u, const kernels::SituParams& p) {
  kernels::situ_span(g.data(), u.data(), g.size(), p);
  return g;
}

// The device against situ_span on every FMA target of this CPU.
void expect_targets_equal(GpuBackend& gpu, const std::vector<float>& g, const std::vector<float>& u,
                          const kernels::SituParams& p, const std::string& what) {
  std::vector<float> device = g;
  ASSERT_TRUE(gpu.situ(device.data(), u.data(), g.size(), p));
  size_t checked = 0;
  test::for_each_target([&] {
    const size_t lanes = kernels::kernel_target_lanes();
    if (lanes != 8 && lanes != 16) return;  // the targets without FMA are not the device's
    ++checked;
    expect_same_bits(cpu_step(g, u, p), device, what);
  });
  EXPECT_GE(checked, 1u);
}

TEST(GpuSitu, EqualsEveryFmaTargetAtK3Widths) {
  const ModelConfig k3 = k3_reference_config();
  const kernels::SituParams k3_params = SituParams::from(k3);
  kernels::SituParams no_linear = k3_params;
  no_linear.has_linear_beta = false;
  GpuBackend& gpu = shared_gpu();
  const uint64_t calls = gpu.counters().situ_steps;
  std::mt19937 rng(39);
  // A row of the dense MLP's width, two of an expert's, an odd tail.
  for (size_t count :
       {static_cast<size_t>(k3.intermediate_size), 2 * static_cast<size_t>(k3.moe_intermediate_size), size_t{67}}) {
    const auto g = values(rng, count), u = values(rng, count);
    expect_targets_equal(gpu, g, u, k3_params, "K3's betas, " + std::to_string(count));
    expect_targets_equal(gpu, g, u, no_linear, "no linear beta, " + std::to_string(count));
  }
  EXPECT_EQ(gpu.counters().situ_steps - calls, 6u);
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// Every edge value as g against every one as u.
void every_edge_pair(std::vector<float>& g, std::vector<float>& u) {
  const std::vector<float> edges = edge_values();
  for (float a : edges)
    for (float b : edges) {
      g.push_back(a);
      u.push_back(b);
    }
}

TEST(GpuSitu, EdgeValuesEqualTheCpu) {
  const kernels::SituParams p = SituParams::from(k3_reference_config());
  GpuBackend& gpu = shared_gpu();
  // Every edge pair (and one NaN aside).
  std::vector<float> g, u;
  every_edge_pair(g, u);
  expect_targets_equal(gpu, g, u, p, "edges");
  std::vector<float> gn = {std::numeric_limits<float>::quiet_NaN(), 1.0f}, un = {1.0f, std::nanf("")};
  std::vector<float> device = gn;
  ASSERT_TRUE(gpu.situ(device.data(), un.data(), 2, p));
  const auto cpu = cpu_step(gn, un, p);
  for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(std::isnan(device[i]) && std::isnan(cpu[i])) << i;
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// Through the seam: situ_inplace_on_backend runs on the installed backend.
TEST(GpuSitu, RunsThroughTheSeam) {
  const kernels::SituParams p = SituParams::from(k3_reference_config());
  GpuBackend& gpu = shared_gpu();
  const uint64_t calls = gpu.counters().situ_steps;
  std::mt19937 rng(3);
  const auto g = values(rng, 1000), u = values(rng, 1000);
  std::vector<float> device = g, cpu = g;
  {
    kernels::ScopedComputeBackend on(&gpu);
    kernels::situ_inplace_on_backend(device.data(), u.data(), g.size(), p, nullptr);
  }
  EXPECT_EQ(gpu.counters().situ_steps - calls, 1u);
  kernels::situ_inplace_on_backend(cpu.data(), u.data(), g.size(), p, nullptr);
  EXPECT_EQ(gpu.counters().situ_steps - calls, 1u) << "no backend installed: the CPU ran it";
  expect_same_bits(cpu, device, "through the seam");
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// Where the device stages into device-local memory (forced on lavapipe),
// the step reads and writes device-local twins, copied in (g and u) and out
// (g) by its command buffer: the CPU's bits at K3's widths and on the
// edges, each value copied exactly three times.
TEST(GpuSitu, DeviceLocalTwinsEqualTheCpu) {
  setenv("K3_GPU_DEVICE_LOCAL_STAGING", "1", 1);
  GpuBackend gpu(test::open_lavapipe_device(), kernels::kernel_target_lanes() >= 16 ? 16 : 8, false);
  unsetenv("K3_GPU_DEVICE_LOCAL_STAGING");
  ASSERT_TRUE(gpu.counters().device_local_staging);
  const ModelConfig k3 = k3_reference_config();
  const kernels::SituParams p = SituParams::from(k3);
  std::mt19937 rng(53);
  uint64_t copied = 0;
  for (size_t count : {static_cast<size_t>(k3.moe_intermediate_size), size_t{67}}) {
    const auto g = values(rng, count), u = values(rng, count);
    expect_targets_equal(gpu, g, u, p, "twins, " + std::to_string(count));
    copied += 3 * count * sizeof(float);
    EXPECT_EQ(gpu.counters().row_twin_bytes, copied) << count;
  }
  std::vector<float> g, u;
  every_edge_pair(g, u);
  expect_targets_equal(gpu, g, u, p, "twins, edges");
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

}  // namespace
}  // namespace k3
