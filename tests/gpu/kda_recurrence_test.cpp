// The KDA recurrence on a Vulkan device (shaders/kda_recurrence.comp through
// GpuBackend::kda_recurrence) against the CPU kernel (kernels/kda_step.h),
// bit for bit: outputs and the state after every call, on Mesa's lavapipe
// (fma not fused: every multiply and add emulated) with the validation
// layer on. The CPU step's bits are the same on every SIMD target (it
// rounds each lane's operations alike), checked here on each target this
// CPU runs (AVX-512 and AVX2 on the developers' machines), so the one
// device order matches both.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gpu/gpu.h"
#include "gpu/gpu_backend.h"
#include "gpu/lavapipe_device.h"
#include "gpu/vulkan_context.h"
#include "kernels/compute_backend.h"
#include "kernels/kda_recurrence.h"
#include "kernels/kda_step.h"
#include "kernels/matmul.h"
#include "lib/simd_targets.h"
#include "model/k3_geometry.h"

namespace k3 {
namespace {

using test::open_lavapipe_device;

std::unique_ptr<GpuBackend> open_gpu() {
  auto device = open_lavapipe_device();
  if (!device) return nullptr;
  const size_t lanes = kernels::kernel_target_lanes() >= 16 ? 16 : 8;
  return std::make_unique<GpuBackend>(std::move(device), lanes, false);
}

void expect_bits_equal(const std::vector<float>& want, const std::vector<float>& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size());
  size_t differ = 0, first = want.size();
  for (size_t i = 0; i < want.size(); ++i)
    if (std::memcmp(&want[i], &got[i], sizeof(float)) != 0 && differ++ == 0) first = i;
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " of " << want.size() << " values differ, first at " << first
                        << " (" << (first < want.size() ? want[first] : 0) << " vs "
                        << (first < got.size() ? got[first] : 0) << ")";
}

// One call's inputs: the heads' state and n tokens' q, k, v, g, beta.
struct Case {
  size_t heads, dim, n;
  std::vector<float> S, q, k, v, g, beta;
};

// Values over a wide range of exponents, some zero, some subnormal.
float wide(std::mt19937& rng, int lo, int hi) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> e(lo, hi), pick(0, 15);
  const int p = pick(rng);
  if (p == 0) return 0.0f;
  if (p == 1) return std::ldexp(u(rng), -135);  // subnormal
  return std::ldexp(u(rng), e(rng));
}

// q and k as l2-normalised rows give (|x| <= 1), v and S of any size, log
// decays from none to full forgetting (exp(-100) is subnormal), beta in
// [0, 1]; `large` puts v and S at 2^60..2^90, short of overflow (an inf
// turns into NaN at the next product with a zero key, and the CPU kernel
// does not define a NaN's bits: the compiler may swap an add's operands).
Case random_case(std::mt19937& rng, size_t heads, size_t dim, size_t n, bool large) {
  Case c{heads, dim, n, {}, {}, {}, {}, {}, {}};
  const size_t hd = heads * dim;
  std::uniform_real_distribution<float> unit(0.0f, 1.0f), decay(-6.0f, 0.0f);
  for (size_t i = 0; i < hd * dim; ++i) c.S.push_back(large ? wide(rng, 60, 90) : wide(rng, -20, 4));
  for (size_t i = 0; i < n * hd; ++i) {
    c.q.push_back(wide(rng, -12, 0));
    c.k.push_back(wide(rng, -12, 0));
    c.v.push_back(large ? wide(rng, 60, 90) : wide(rng, -20, 6));
    c.g.push_back(i % 97 == 0 ? -100.0f : decay(rng));
  }
  for (size_t i = 0; i < n * heads; ++i) c.beta.push_back(unit(rng));
  return c;
}

// The CPU kernel: each head through the tokens in turn, the step of kda_step.h.
void cpu_recurrence(Case& c, std::vector<float>& o) {
  const size_t hd = c.heads * c.dim;
  o.assign(c.n * hd, 0.0f);
  std::vector<float> u(c.dim);
  for (size_t h = 0; h < c.heads; ++h)
    for (size_t t = 0; t < c.n; ++t) {
      const size_t at = t * hd + h * c.dim;
      kernels::kda_recurrent_step(c.S.data() + h * c.dim * c.dim, c.q.data() + at, c.k.data() + at, c.v.data() + at,
                                  c.g.data() + at, c.beta[t * c.heads + h], c.dim, o.data() + at, u.data());
    }
}

// The device's outputs and state equal the CPU kernel's on every target,
// over two calls (the second continues the state the first left).
void expect_device_equals_cpu(GpuBackend& gpu, Case c, const std::string& what) {
  Case device = c;
  std::vector<float> want_o, got_o(c.n * c.heads * c.dim, -1.0f);
  for (int call = 0; call < 2; ++call) {
    const std::string at = what + " call " + std::to_string(call);
    const Case before = c;
    cpu_recurrence(c, want_o);
    test::for_each_target([&] {
      Case again = before;
      std::vector<float> o;
      cpu_recurrence(again, o);
      expect_bits_equal(want_o, o, at + ": the CPU kernel's outputs on every target");
      expect_bits_equal(c.S, again.S, at + ": the CPU kernel's state on every target");
    });
    const uint64_t runs = gpu.counters().kda_recurrences;
    ASSERT_TRUE(gpu.kda_recurrence(device.S.data(), device.q.data(), device.k.data(), device.v.data(), device.g.data(),
                                   device.beta.data(), c.heads, c.dim, c.n, got_o.data()));
    EXPECT_EQ(gpu.counters().kda_recurrences, runs + 1);
    expect_bits_equal(want_o, got_o, at + ": outputs");
    expect_bits_equal(c.S, device.S, at + ": state");
  }
}

TEST(GpuKdaRecurrence, RandomShapesEqualTheCpuBitForBit) {
  auto gpu = open_gpu();
  ASSERT_TRUE(gpu);
  ASSERT_TRUE(VulkanInstance::validation_enabled());
  std::mt19937 rng(39);
  // A dim off the vector width, one over the workgroup's 64 columns, a few
  // dozen tokens.
  const size_t shapes[][3] = {{3, 16, 40}, {2, 20, 33}, {1, 70, 24}};
  for (const auto& s : shapes) {
    const std::string what =
        std::to_string(s[0]) + " heads of " + std::to_string(s[1]) + ", " + std::to_string(s[2]) + " tokens";
    expect_device_equals_cpu(*gpu, random_case(rng, s[0], s[1], s[2], false), what);
  }
  expect_device_equals_cpu(*gpu, random_case(rng, 2, 16, 6, true), "large magnitudes");
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// K3's KDA heads and dim (k3-synth --preset k3's geometry), two tokens.
TEST(GpuKdaRecurrence, K3ShapeEqualsTheCpuBitForBit) {
  auto gpu = open_gpu();
  ASSERT_TRUE(gpu);
  const ModelGeometry k3 = k3_geometry();
  std::mt19937 rng(3);
  expect_device_equals_cpu(
      *gpu, random_case(rng, static_cast<size_t>(k3.kda_num_heads), static_cast<size_t>(k3.kda_head_dim), 2, false),
      "K3");
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// The forward pass's seam: kda_recurrence_on_backend runs on the installed
// backend (its counter moves) with the CPU fallback's bits; the device
// memory its buffers hold is the plan's formula, gpu_kda_device_bytes (with
// a state kept for each of two sequences too).
TEST(GpuKdaRecurrence, SeamRunsOnTheBackendAndThePeakIsThePlansFormula) {
  auto gpu = open_gpu();
  ASSERT_TRUE(gpu);
  std::mt19937 rng(5);
  Case cpu = random_case(rng, 4, 16, 9, false);
  Case device = cpu;
  std::vector<float> want(cpu.n * 64), got(cpu.n * 64);
  kernels::kda_recurrence_on_backend(cpu.S.data(), cpu.q.data(), cpu.k.data(), cpu.v.data(), cpu.g.data(),
                                     cpu.beta.data(), 4, 16, cpu.n, want.data(), nullptr);
  {
    kernels::ScopedComputeBackend scoped(gpu.get());
    kernels::kda_recurrence_on_backend(device.S.data(), device.q.data(), device.k.data(), device.v.data(),
                                       device.g.data(), device.beta.data(), 4, 16, device.n, got.data(), nullptr);
  }
  EXPECT_EQ(gpu->counters().kda_recurrences, 1u);
  expect_bits_equal(want, got, "outputs through the seam");
  expect_bits_equal(cpu.S, device.S, "state through the seam");
  EXPECT_EQ(gpu->peak_bytes(), gpu_kda_device_bytes(4, 16, 9));
  EXPECT_EQ(gpu_kda_device_bytes(4, 16, 9), 4 * 16 * 16 * 4 + 9 * (4 * 64 + 4) * 4 + 9 * 64 * 4);
  EXPECT_EQ(gpu_kda_device_bytes(0, 16, 9), 0u);  // no KDA layers
  EXPECT_EQ(gpu->upload_bytes(), 4 * 16 * 16 * 4 + 9 * (4 * 64 + 4) * 4);
  // Two sequences' states kept within a span of kept states: a buffer
  // each, the plan's figure for two sequences.
  Case other = random_case(rng, 4, 16, 9, false);  // outlives the span, which copies its state back
  {
    kernels::ScopedComputeBackend scoped(gpu.get());
    const kernels::ScopedKdaStates kept;
    for (Case* c : {&device, &other})
      kernels::kda_recurrence_on_backend(c->S.data(), c->q.data(), c->k.data(), c->v.data(), c->g.data(),
                                         c->beta.data(), 4, 16, c->n, got.data(), nullptr);
  }
  EXPECT_EQ(gpu->peak_bytes(), gpu_kda_device_bytes(4, 16, 9, 2));
  EXPECT_EQ(gpu_kda_device_bytes(4, 16, 9, 2), 2 * 4 * 16 * 16 * 4 + 9 * (4 * 64 + 4) * 4 + 9 * 64 * 4);
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

}  // namespace
}  // namespace k3
