// The Vulkan matrix products (lib/gpu) against the CPU kernels, bit for bit,
// on Mesa's lavapipe with the validation layer on. lavapipe's fma() is not
// fused, so this checks the exact emulation (shaders/exact_fma.glsl).
//
// Two steps: (1) a scalar loop in a target's order (lanes, column
// assignment, fma or not, the halving lane sum) equals the real kernel on
// every SIMD target this CPU runs (so the order is the kernel's, not a
// guess); (2) the device following that order equals the loop, for 16 and
// 8 lanes (the AVX-512 and AVX2 orders) wherever the test runs, and the
// real kernel of this machine's target directly.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "gpu/fma_probe.h"
#include "gpu/gpu.h"
#include "gpu/gpu_backend.h"
#include "gpu/lane_order.h"
#include "gpu/lavapipe_device.h"
#include "gpu/vulkan_context.h"
#include "kernels/bf16.h"
#include "kernels/matmul.h"
#include "kernels/mxfp4.h"
#include "lib/simd_targets.h"

namespace k3 {
namespace {

// AVX2 and AVX-512 (8 and 16 lanes) multiply-add with FMA, one rounding.
float mul_add(float w, float x, float acc) { return std::fma(w, x, acc); }

// Y in the order of a target with `lanes` float lanes (kernels/matmul.cpp).
std::vector<float> bf16_in_order(const std::vector<uint16_t>& w, size_t rows, size_t cols, const std::vector<float>& x,
                                 size_t n, size_t lanes) {
  return test::bf16_lane_order(w, rows, cols, x, n, lanes, mul_add);
}

std::vector<float> mxfp4_in_order(const std::vector<uint8_t>& packed, const std::vector<uint8_t>& scales, size_t rows,
                                  size_t cols, const std::vector<float>& x, size_t n, size_t lanes) {
  return test::mxfp4_lane_order(packed, scales, rows, cols, x, n, lanes, mul_add);
}

// Activations over a wide range of exponents, a few subnormal, so the
// emulated roundings meet carries, ties near them and gradual underflow.
std::vector<float> activations(std::mt19937& rng, size_t count, bool tiny) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> e(-20, 20);
  std::vector<float> v(count);
  for (float& f : v) f = std::ldexp(u(rng), tiny ? e(rng) - 128 : e(rng));
  return v;
}

std::vector<uint16_t> bf16_weights(std::mt19937& rng, size_t count) {
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<uint16_t> w(count);
  for (uint16_t& b : w) b = kernels::f32_to_bf16(u(rng));
  return w;
}

using test::expect_same_bits;
using test::open_lavapipe_device;
using test::random_bytes;

struct Shape {
  size_t rows, cols, n;
  bool tiny;
};
// K3's widths (hidden 7168, expert 3072) and odd ones: a column tail
// (cols % lanes != 0), fewer columns than lanes, a row count off the
// workgroup size.
const Shape kBf16Shapes[] = {
    {67, 7168, 3, false}, {40, 3072, 5, false}, {33, 100, 4, false}, {9, 5, 2, false}, {20, 1536, 3, true}};
const Shape kMxShapes[] = {{67, 3072, 3, false}, {40, 7168, 2, false}, {17, 64, 5, true}};

TEST(GpuMatmulOrder, ScalarOrderIsTheKernelsOnEveryTarget) {
  std::mt19937 rng(7);
  const size_t rows = 13, cols = 7168 + 5, n = 3;
  const auto w = bf16_weights(rng, rows * cols);
  const auto x = activations(rng, n * cols, false);
  const size_t mx_cols = 3072;
  const auto packed = random_bytes(rng, rows * mx_cols / 2, 0, 255);
  const auto scales = random_bytes(rng, rows * mx_cols / 32, 112, 130);
  const auto xm = activations(rng, n * mx_cols, true);
  size_t checked = 0;
  test::for_each_target([&] {
    const size_t lanes = kernels::kernel_target_lanes();
    // The device runs the 8- and 16-lane orders only (GpuBackend refuses the
    // others). How a narrower target multiplies and adds depends on its
    // compiler (clang contracts EMU128's MulAdd into an fma, g++ here does
    // not), so those targets are not the shaders' contract.
    if (lanes != 8 && lanes != 16) return;
    ++checked;
    std::vector<float> y(n * rows), ym(n * rows);
    kernels::matmul_bf16(w.data(), rows, cols, x.data(), n, y.data(), nullptr);
    expect_same_bits(bf16_in_order(w, rows, cols, x, n, lanes), y, "bf16");
    kernels::matmul_mxfp4(packed.data(), scales.data(), rows, mx_cols, xm.data(), n, ym.data(), nullptr);
    expect_same_bits(mxfp4_in_order(packed, scales, rows, mx_cols, xm, n, lanes), ym, "mxfp4");
  });
  // This machine runs AVX2 at least (CI's and the developers'): one order checked.
  EXPECT_GE(checked, 1u);
}

TEST(GpuBackend, LavapipeFmaIsNotFused) {
  auto device = open_lavapipe_device();
  ASSERT_TRUE(device);
  EXPECT_FALSE(probe_fma_fused(*device));
  EXPECT_TRUE(device->has_float64());
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

TEST(GpuBackend, Bf16EqualsTheCpuOrderBitForBit) {
  auto device = open_lavapipe_device();
  ASSERT_TRUE(device);
  ASSERT_TRUE(VulkanInstance::validation_enabled());
  const size_t native = kernels::kernel_target_lanes();
  for (size_t lanes : {size_t{16}, size_t{8}}) {
    SCOPED_TRACE("lanes " + std::to_string(lanes));
    GpuBackend gpu(std::move(device), lanes, false);
    std::mt19937 rng(static_cast<unsigned>(lanes));
    for (const Shape& s : kBf16Shapes) {
      const std::string what = std::to_string(s.rows) + "x" + std::to_string(s.cols) + " n=" + std::to_string(s.n);
      const auto w = bf16_weights(rng, s.rows * s.cols);
      const auto x = activations(rng, s.n * s.cols, s.tiny);
      std::vector<float> y(s.n * s.rows, -1.0f);
      const uint64_t products = gpu.products(), uploaded = gpu.upload_bytes();
      ASSERT_TRUE(gpu.bf16(w.data(), s.rows, s.cols, x.data(), s.n, y.data()));
      EXPECT_EQ(gpu.products(), products + 1);
      EXPECT_EQ(gpu.upload_bytes() - uploaded, (s.rows * s.cols * 2 + s.n * s.cols * 4));
      expect_same_bits(bf16_in_order(w, s.rows, s.cols, x, s.n, lanes), y, what);
      if (lanes == native) {
        std::vector<float> cpu(s.n * s.rows);
        kernels::matmul_bf16(w.data(), s.rows, s.cols, x.data(), s.n, cpu.data(), nullptr);
        expect_same_bits(cpu, y, what + " (the CPU kernel)");
      }
    }
    device = open_lavapipe_device();
  }
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

TEST(GpuBackend, Mxfp4EqualsTheCpuOrderBitForBit) {
  auto device = open_lavapipe_device();
  ASSERT_TRUE(device);
  const size_t native = kernels::kernel_target_lanes();
  for (size_t lanes : {size_t{16}, size_t{8}}) {
    SCOPED_TRACE("lanes " + std::to_string(lanes));
    GpuBackend gpu(std::move(device), lanes, false);
    std::mt19937 rng(static_cast<unsigned>(100 + lanes));
    for (const Shape& s : kMxShapes) {
      const std::string what = std::to_string(s.rows) + "x" + std::to_string(s.cols) + " n=" + std::to_string(s.n);
      const auto packed = random_bytes(rng, s.rows * s.cols / 2, 0, 255);
      // Scale bytes 0 (subnormal weights) up to 253, the largest valid.
      auto scales = random_bytes(rng, s.rows * s.cols / 32, 110, 135);
      scales[0] = 0;
      scales[1] = s.tiny ? 253 : 1;  // 253: codes 4 and 6 give an FP32 weight of inf, as on the CPU
      const auto x = activations(rng, s.n * s.cols, s.tiny);
      std::vector<float> y(s.n * s.rows, -1.0f);
      const uint64_t uploaded = gpu.upload_bytes();
      ASSERT_TRUE(gpu.mxfp4(packed.data(), scales.data(), s.rows, s.cols, x.data(), s.n, y.data()));
      EXPECT_EQ(gpu.upload_bytes() - uploaded, (s.rows * s.cols / 2 + s.rows * s.cols / 32 + s.n * s.cols * 4));
      expect_same_bits(mxfp4_in_order(packed, scales, s.rows, s.cols, x, s.n, lanes), y, what);
      if (lanes == native) {
        std::vector<float> cpu(s.n * s.rows);
        kernels::matmul_mxfp4(packed.data(), scales.data(), s.rows, s.cols, x.data(), s.n, cpu.data(), nullptr);
        expect_same_bits(cpu, y, what + " (the CPU kernel)");
      }
    }
    device = open_lavapipe_device();
  }
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// Sums whose double rounding (to double, then to FP32) differs from the one
// rounding of an FMA, which random data almost never meets (~2^-29 of
// sums). Row 0, lane 0: -2^-60, then + 3 * (1 + 2^-23) = 3 + 1.5 ulp, a
// midpoint: rounded once, 3 + 1 ulp; rounded to double first the small
// term vanishes and the tie goes to even, 3 + 2 ulp. Row 1, lane 1:
// +2^-60, then + 3 * (1 + 3 * 2^-23) = 3 + 4.5 ulp: once, 3 + 5 ulp;
// twice, or truncated to double without the sticky bit of round-to-odd,
// the tie goes to even, 3 + 4 ulp. (ulp = 2^-22 between 2 and 4.)
TEST(GpuBackend, Bf16RoundsOnceWhereDoubleRoundingWouldNot) {
  auto device = open_lavapipe_device();
  ASSERT_TRUE(device);
  const size_t lanes = kernels::kernel_target_lanes() >= 16 ? 16 : 8, cols = 32, rows = 2;
  GpuBackend gpu(std::move(device), lanes, false);
  std::vector<uint16_t> w(rows * cols, 0);
  std::vector<float> x(cols, 0.0f);
  x[0] = x[1] = std::ldexp(1.0f, -60);
  x[lanes] = 1.0f + std::ldexp(1.0f, -23);
  x[lanes + 1] = 1.0f + 3 * std::ldexp(1.0f, -23);
  w[0] = kernels::f32_to_bf16(-1.0f);
  w[lanes] = kernels::f32_to_bf16(3.0f);
  w[cols + 1] = kernels::f32_to_bf16(1.0f);
  w[cols + lanes + 1] = kernels::f32_to_bf16(3.0f);
  std::vector<float> y(rows);
  ASSERT_TRUE(gpu.bf16(w.data(), rows, cols, x.data(), 1, y.data()));
  const float ulp = std::ldexp(1.0f, -22);
  expect_same_bits({3.0f + ulp, 3.0f + 5 * ulp}, y, "one rounding");
  expect_same_bits(bf16_in_order(w, rows, cols, x, 1, lanes), y, "the CPU order");
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// The device memory its buffers hold, exactly: four buffers (weights + 4,
// scales + 4, activations in and out; products that fit one staging slice
// use one slot), each grown to its largest call and kept, the peak their sum; gpu_matmul_device_bytes, the plan's
// figure, equals it when one product is the largest in every respect. A budget below what a product needs refuses it
// with one line naming the setting.
TEST(GpuBackend, DevicePeakIsThePlansFormula) {
  auto device = open_lavapipe_device();
  ASSERT_TRUE(device);
  const size_t lanes = kernels::kernel_target_lanes() >= 16 ? 16 : 8;
  GpuBackend gpu(std::move(device), lanes, false);
  std::mt19937 rng(7);
  // BF16 96 x 64 over 5 rows, then MXFP4 128 x 256 over 9 rows (the larger in every way).
  const auto w = bf16_weights(rng, 96 * 64);
  const auto x = activations(rng, 5 * 64, false);
  std::vector<float> y(5 * 96);
  ASSERT_TRUE(gpu.bf16(w.data(), 96, 64, x.data(), 5, y.data()));
  // No scales buffer until an MXFP4 product.
  EXPECT_EQ(gpu.peak_bytes(), (96 * 64 * 2 + 4) + 5 * 64 * 4 + 5 * 96 * 4);
  const auto packed = random_bytes(rng, 128 * 128, 0, 255);
  const auto scales = random_bytes(rng, 128 * 8, 120, 130);
  const auto x2 = activations(rng, 9 * 256, false);
  std::vector<float> y2(9 * 128);
  ASSERT_TRUE(gpu.mxfp4(packed.data(), scales.data(), 128, 256, x2.data(), 9, y2.data()));
  const uint64_t mx_bytes = (128 * 128 + 4) + (128 * 8 + 4) + 9 * 256 * 4 + 9 * 128 * 4;
  EXPECT_EQ(gpu.peak_bytes(), mx_bytes);
  EXPECT_EQ(gpu_matmul_device_bytes({128 * 128, 128 * 8, 256, 128}, 9), mx_bytes);
  const kernels::ComputeBackendCounters c = gpu.counters();
  EXPECT_EQ(c.products, 2u);
  EXPECT_EQ(c.upload_bytes, 96u * 64 * 2 + 5 * 64 * 4 + 128 * 128 + 128 * 8 + 9 * 256 * 4);
  EXPECT_EQ(c.peak_bytes, mx_bytes);

  // A budget a byte short of the MXFP4 product: the BF16 one runs, the other is refused.
  GpuBackend capped(open_lavapipe_device(), lanes, false, mx_bytes - 1);
  ASSERT_TRUE(capped.bf16(w.data(), 96, 64, x.data(), 5, y.data()));
  try {
    capped.mxfp4(packed.data(), scales.data(), 128, 256, x2.data(), 9, y2.data());
    FAIL() << "a product beyond the budget ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kResource);
    EXPECT_NE(e.message().find("gpu_mb"), std::string::npos) << e.message();
  }
  EXPECT_LE(capped.peak_bytes(), mx_bytes - 1);
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// The double-buffered staging: with a 4 KiB stage a product's weights go
// in row slices through the two slots, the bits still the CPU order's (an
// output is one invocation over all its columns, wherever its row's slice
// starts). The counts are exact: one dispatch a slice; every slice after
// the first copied while the other slot's ran; the device peak two slots of
// one slice each, the plan's formula for that stage size.
TEST(GpuBackend, StagedSlicesKeepTheBitsAndOverlap) {
  setenv("K3_GPU_STAGE_BYTES", "4096", 1);
  const size_t lanes = kernels::kernel_target_lanes() >= 16 ? 16 : 8, n = 3;
  std::mt19937 rng(4096);
  {  // BF16 200 x 256: 512-byte rows, 8 a slice, 25 slices
    auto device = open_lavapipe_device();
    ASSERT_TRUE(device);
    GpuBackend gpu(std::move(device), lanes, false);
    const size_t rows = 200, cols = 256;
    const auto w = bf16_weights(rng, rows * cols);
    const auto x = activations(rng, n * cols, false);
    std::vector<float> y(n * rows, -1.0f);
    ASSERT_TRUE(gpu.bf16(w.data(), rows, cols, x.data(), n, y.data()));
    expect_same_bits(bf16_in_order(w, rows, cols, x, n, lanes), y, "bf16, staged");
    EXPECT_EQ(gpu.dispatches(), 25u);
    EXPECT_EQ(gpu.overlapped_upload_bytes(), (rows - 8) * cols * 2);
    EXPECT_LE(gpu.busy_waits(), 23u);  // at most one a refill (slices 3..25)
    const uint64_t peak = 2 * (4096 + 4) + n * cols * 4 + n * rows * 4;
    EXPECT_EQ(gpu.peak_bytes(), peak);
    EXPECT_EQ(gpu_matmul_device_bytes({rows * cols * 2, 0, cols, rows}, n, 4096), peak);
    EXPECT_EQ(gpu.counters().dispatches, 25u);
  }
  {  // MXFP4 130 x 512: 256 + 16 bytes a row, 16 a slice, 9 slices (the last of 2 rows)
    GpuBackend gpu(open_lavapipe_device(), lanes, false);
    const size_t rows = 130, cols = 512;
    const auto packed = random_bytes(rng, rows * cols / 2, 0, 255);
    const auto scales = random_bytes(rng, rows * cols / 32, 110, 135);
    const auto x = activations(rng, n * cols, false);
    std::vector<float> y(n * rows, -1.0f);
    ASSERT_TRUE(gpu.mxfp4(packed.data(), scales.data(), rows, cols, x.data(), n, y.data()));
    expect_same_bits(mxfp4_in_order(packed, scales, rows, cols, x, n, lanes), y, "mxfp4, staged");
    EXPECT_EQ(gpu.dispatches(), 9u);
    EXPECT_EQ(gpu.overlapped_upload_bytes(), (rows - 16) * (cols / 2 + cols / 32));
    const uint64_t peak = 2 * (4096 + 4) + 2 * (256 + 4) + n * cols * 4 + n * rows * 4;
    EXPECT_EQ(gpu.peak_bytes(), peak);
    EXPECT_EQ(gpu_matmul_device_bytes({rows * cols / 2, rows * cols / 32, cols, rows}, n, 4096), peak);
  }
  unsetenv("K3_GPU_STAGE_BYTES");
  // A product that fits one slice uses one slot: nothing overlaps.
  GpuBackend gpu(open_lavapipe_device(), lanes, false);
  const auto w = bf16_weights(rng, 64 * 64);
  const auto x = activations(rng, n * 64, false);
  std::vector<float> y(n * 64);
  ASSERT_TRUE(gpu.bf16(w.data(), 64, 64, x.data(), n, y.data()));
  EXPECT_EQ(gpu.dispatches(), 1u);
  EXPECT_EQ(gpu.overlapped_upload_bytes(), 0u);
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// Staging into device-local memory (a discrete GPU without host-visible
// device-local memory; forced on lavapipe by K3_GPU_DEVICE_LOCAL_STAGING=1):
// each slice's dispatch first copies it on the device, in its command
// buffer, behind a barrier. The same bits as the CPU order, one copy a
// slice, the validation layer silent, and the peak the plan's formula
// with the copies counted (each slot's weights and scales twice).
TEST(GpuBackend, DeviceLocalStagingKeepsTheBits) {
  setenv("K3_GPU_STAGE_BYTES", "4096", 1);
  setenv("K3_GPU_DEVICE_LOCAL_STAGING", "1", 1);
  const size_t lanes = kernels::kernel_target_lanes() >= 16 ? 16 : 8, n = 3;
  std::mt19937 rng(4097);
  {  // BF16 200 x 256: 25 slices
    GpuBackend gpu(open_lavapipe_device(), lanes, false);
    const size_t rows = 200, cols = 256;
    const auto w = bf16_weights(rng, rows * cols);
    const auto x = activations(rng, n * cols, false);
    std::vector<float> y(n * rows, -1.0f);
    ASSERT_TRUE(gpu.bf16(w.data(), rows, cols, x.data(), n, y.data()));
    expect_same_bits(bf16_in_order(w, rows, cols, x, n, lanes), y, "bf16, staged into device-local memory");
    EXPECT_TRUE(gpu.counters().device_local_staging);
    EXPECT_EQ(gpu.counters().device_local_copies, 25u);
    EXPECT_EQ(gpu.dispatches(), 25u);
    // The weights' slots and the activations, each with its device-local copy.
    EXPECT_EQ(gpu.peak_bytes(), 4 * (4096 + 4) + 2 * (n * cols * 4 + n * rows * 4));
    EXPECT_EQ(gpu_matmul_device_bytes({rows * cols * 2, 0, cols, rows}, n, 4096, true), gpu.peak_bytes());
  }
  {  // MXFP4 130 x 512: 9 slices, their scales copied too
    GpuBackend gpu(open_lavapipe_device(), lanes, false);
    const size_t rows = 130, cols = 512;
    const auto packed = random_bytes(rng, rows * cols / 2, 0, 255);
    const auto scales = random_bytes(rng, rows * cols / 32, 110, 135);
    const auto x = activations(rng, n * cols, false);
    std::vector<float> y(n * rows, -1.0f);
    ASSERT_TRUE(gpu.mxfp4(packed.data(), scales.data(), rows, cols, x.data(), n, y.data()));
    expect_same_bits(mxfp4_in_order(packed, scales, rows, cols, x, n, lanes), y, "mxfp4, staged into device-local");
    EXPECT_EQ(gpu.counters().device_local_copies, 9u);
    EXPECT_EQ(gpu_matmul_device_bytes({rows * cols / 2, rows * cols / 32, cols, rows}, n, 4096, true),
              gpu.peak_bytes());
  }
  unsetenv("K3_GPU_DEVICE_LOCAL_STAGING");
  unsetenv("K3_GPU_STAGE_BYTES");
  // lavapipe's memory is device-local and host-visible: no copies there.
  GpuBackend shared(open_lavapipe_device(), lanes, false);
  const auto w = bf16_weights(rng, 64 * 64);
  const auto x = activations(rng, n * 64, false);
  std::vector<float> y(n * 64);
  ASSERT_TRUE(shared.bf16(w.data(), 64, 64, x.data(), n, y.data()));
  EXPECT_FALSE(shared.counters().device_local_staging);
  EXPECT_EQ(shared.counters().device_local_copies, 0u);
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

TEST(GpuBackend, OpenRefusesADeviceThatIsNotThere) {
  setenv("K3_GPU_VALIDATION", "1", 1);
  try {
    open_gpu_backend(99);
    FAIL() << "device 99 opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    EXPECT_NE(e.message().find("no such Vulkan device"), std::string::npos) << e.message();
  }
}

TEST(GpuBackend, ListsLavapipeWithItsFma) {
  setenv("K3_GPU_VALIDATION", "1", 1);
  bool found = false;
  for (const GpuDeviceInfo& d : list_gpu_devices()) {
    if (d.name.find("llvmpipe") == std::string::npos) continue;
    found = true;
    EXPECT_EQ(d.type, "cpu");
    EXPECT_FALSE(d.fma_fused);
    EXPECT_TRUE(d.float64);
    EXPECT_TRUE(d.unusable_reason.empty()) << d.unusable_reason;
  }
  EXPECT_TRUE(found);
  EXPECT_TRUE(gpu_built());
}

}  // namespace
}  // namespace k3
