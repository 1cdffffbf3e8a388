// What the device tests share: lavapipe opened with the validation layer on
// (a test fails, never skips, without it), one backend on it per test
// program, a bit-for-bit comparison, random bytes for packed weights and
// scales, and floats over many exponents.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gpu/gpu_backend.h"
#include "gpu/vulkan_context.h"
#include "kernels/matmul.h"

namespace k3::test {

inline std::unique_ptr<VulkanDevice> open_lavapipe_device() {
  setenv("K3_GPU_VALIDATION", "1", 1);
  auto instance = VulkanInstance::shared();
  const std::vector<VkPhysicalDevice> devices = instance->physical_devices();
  for (size_t i = 0; i < devices.size(); ++i) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(devices[i], &p);
    if (std::string(p.deviceName).find("llvmpipe") != std::string::npos)
      return std::make_unique<VulkanDevice>(instance, devices[i], static_cast<int>(i));
  }
  ADD_FAILURE() << "no lavapipe device: install mesa-vulkan-drivers (scripts/install-deps.sh --tests)";
  return nullptr;
}

// One backend for the whole program, in the CPU kernels' lane order:
// lavapipe compiles a pipeline in about a second, so a program's tests share
// it (and its counters).
inline GpuBackend& shared_gpu() {
  static GpuBackend gpu(open_lavapipe_device(), kernels::kernel_target_lanes() >= 16 ? 16 : 8, false);
  return gpu;
}

// memcmp per element; says how many differ and the first.
inline void expect_same_bits(const std::vector<float>& want, const std::vector<float>& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size());
  size_t differ = 0, first = want.size();
  for (size_t i = 0; i < want.size(); ++i)
    if (std::memcmp(&want[i], &got[i], sizeof(float)) != 0 && differ++ == 0) first = i;
  uint32_t wb = 0, gb = 0;
  if (first < want.size()) {
    std::memcpy(&wb, &want[first], 4);
    std::memcpy(&gb, &got[first], 4);
  }
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " of " << want.size() << " differ, first at " << first << " ("
                        << std::hex << wb << " vs " << gb << ")";
}

// As expect_same_bits, but any two NaNs are equal: for ops whose NaNs come
// from the C++ code's own arithmetic (inf * 0, a NaN negated), whose sign the
// language leaves to the compiler (gcc and clang differ on kda_gate's), and
// which never reach an output (a non-finite value stops the run:
// model/finite_check.h). Where one side is NaN, so must the other be.
inline void expect_same_bits_any_nan(const std::vector<float>& want, const std::vector<float>& got,
                                     const std::string& what) {
  ASSERT_EQ(want.size(), got.size());
  std::vector<float> w = want, g = got;
  for (size_t i = 0; i < w.size(); ++i)
    if (std::isnan(w[i]) && std::isnan(g[i])) w[i] = g[i] = 0.0f;
  expect_same_bits(w, g, what);
}

// `count` bytes drawn uniformly from [lo, hi].
inline std::vector<uint8_t> random_bytes(std::mt19937& rng, size_t count, int lo, int hi) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<uint8_t> v(count);
  for (uint8_t& b : v) b = static_cast<uint8_t>(d(rng));
  return v;
}

// n floats u * 2^e, u uniform in [-1, 1], e uniform in [lo, hi]: values
// over many exponents, so products and sums meet many roundings.
inline std::vector<float> floats_over_exponents(std::mt19937& rng, size_t n, int lo, int hi) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> e(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = std::ldexp(u(rng), e(rng));
  return v;
}

}  // namespace k3::test
