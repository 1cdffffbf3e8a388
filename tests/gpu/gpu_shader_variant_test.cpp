// The matrix products' native-fma build (shaders/matmul_common.glsl with
// K3_NATIVE_FMA_ONLY), for fused devices without shaderFloat64/shaderInt64:
// its SPIR-V declares no 64-bit capability, it runs the CPU order with the
// device's own fma(), and the choice between the builds is a pure function
// of the probed fma and the features (shaderDenormPreserveFloat32 among
// them: both builds ask the device to keep FP32 subnormals).
//
// lavapipe's fma() is not fused (its results are a multiply, then an add),
// so the native build there must equal a multiply-then-add chain in the
// CPU's order, computed here; lavapipe flushes subnormals, so the inputs
// keep every product and sum normal.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "gpu/fma_probe_rate.h"
#include "gpu/gpu.h"
#include "gpu/gpu_backend.h"
#include "gpu/lane_order.h"
#include "gpu/lavapipe_device.h"
#include "gpu/shader_variant.h"
#include "gpu/spirv_denorm_preserve.h"
#include "gpu/spirv_shaders.h"
#include "gpu/vulkan_context.h"
#include "kernels/bf16.h"
#include "kernels/mxfp4.h"
#include "model/k3_geometry.h"

namespace k3 {
namespace {

// A multiply, rounded, then an add, rounded: volatile keeps the compiler
// from contracting them into an fma.
float mul_then_add(float w, float x, float acc) {
  volatile float p = w * x;
  return p + acc;
}

// Y in a target's lane order with each step a multiply then an add.
std::vector<float> bf16_mul_add_chain(const std::vector<uint16_t>& w, size_t rows, size_t cols,
                                      const std::vector<float>& x, size_t n, size_t lanes) {
  return test::bf16_lane_order(w, rows, cols, x, n, lanes, mul_then_add);
}

std::vector<float> mxfp4_mul_add_chain(const std::vector<uint8_t>& packed, const std::vector<uint8_t>& scales,
                                       size_t rows, size_t cols, const std::vector<float>& x, size_t n, size_t lanes) {
  return test::mxfp4_lane_order(packed, scales, rows, cols, x, n, lanes, mul_then_add);
}

// Activations of moderate exponents and weights away from zero: with these
// no product or partial sum comes near FP32's subnormal range.
std::vector<float> activations(std::mt19937& rng, size_t count) {
  std::uniform_real_distribution<float> u(0.5f, 1.0f);
  std::uniform_int_distribution<int> e(-12, 12), sign(0, 1);
  std::vector<float> v(count);
  for (float& f : v) f = std::ldexp(sign(rng) ? -u(rng) : u(rng), e(rng));
  return v;
}

std::vector<uint16_t> bf16_weights(std::mt19937& rng, size_t count) {
  std::uniform_real_distribution<float> u(0.25f, 2.0f);
  std::uniform_int_distribution<int> sign(0, 1);
  std::vector<uint16_t> w(count);
  for (uint16_t& b : w) b = kernels::f32_to_bf16(sign(rng) ? -u(rng) : u(rng));
  return w;
}

using test::expect_same_bits;
using test::open_lavapipe_device;
using test::random_bytes;

// The capabilities a SPIR-V module declares (OpCapability, opcode 17).
std::vector<uint32_t> capabilities(const std::vector<uint32_t>& words) {
  std::vector<uint32_t> caps;
  for (size_t i = 5; i < words.size();) {
    const uint32_t op = words[i] & 0xffff, count = words[i] >> 16;
    if (count == 0) break;
    if (op == 17 && i + 1 < words.size()) caps.push_back(words[i + 1]);
    i += count;
  }
  return caps;
}
constexpr uint32_t kCapabilityFloat64 = 10, kCapabilityInt64 = 11;

TEST(GpuShaderVariant, TheNativeBuildDeclaresNo64BitTypes) {
  for (const char* base : {"matmul_bf16", "matmul_mxfp4"}) {
    const std::vector<uint32_t> exact = capabilities(spirv_shader(base));
    const std::vector<uint32_t> native = capabilities(spirv_shader((std::string(base) + "_native").c_str()));
    // The exact build needs both (the emulated fma); the native one neither.
    EXPECT_NE(std::find(exact.begin(), exact.end(), kCapabilityFloat64), exact.end()) << base;
    EXPECT_NE(std::find(exact.begin(), exact.end(), kCapabilityInt64), exact.end()) << base;
    EXPECT_EQ(std::find(native.begin(), native.end(), kCapabilityFloat64), native.end()) << base;
    EXPECT_EQ(std::find(native.begin(), native.end(), kCapabilityInt64), native.end()) << base;
    EXPECT_FALSE(native.empty()) << base;  // Shader, at least: the module was read
  }
}

// Every combination of the probe's answer and the three features.
TEST(GpuShaderVariant, ChoiceByFmaAndFeatures) {
  using V = MatmulShaderVariant;
  for (int bits = 0; bits < 16; ++bits) {
    const GpuFeatures f{(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0, (bits & 8) != 0};
    SCOPED_TRACE("fused " + std::to_string(f.fma_fused) + " float64 " + std::to_string(f.float64) + " int64 " +
                 std::to_string(f.int64) + " denorm preserve " + std::to_string(f.denorm_preserve32));
    const MatmulShaderChoice c = choose_matmul_shader(f);
    // The device's own fma and float arithmetic only where fused and
    // keeping subnormals; with 64-bit types the exact build (its native
    // path there, the emulation elsewhere), without them the native build
    // where it is exact, else nothing.
    const bool native = f.fma_fused && f.denorm_preserve32, wide = f.float64 && f.int64;
    EXPECT_EQ(c.variant, wide ? V::kExact : native ? V::kNative : V::kNone);
    EXPECT_EQ(c.native_fma, native);
    EXPECT_EQ(c.why_not.empty(), c.variant != V::kNone) << c.why_not;
    if (c.variant != V::kNone) continue;
    // One clause naming why the device's arithmetic cannot be used and what
    // the emulation lacks.
    EXPECT_NE(c.why_not.find(f.fma_fused ? "no shaderDenormPreserveFloat32" : "not fused"), std::string::npos)
        << c.why_not;
    EXPECT_EQ(c.why_not.find("shaderFloat64") != std::string::npos, !f.float64) << c.why_not;
    EXPECT_EQ(c.why_not.find("shaderInt64") != std::string::npos, !f.int64) << c.why_not;
    EXPECT_EQ(c.why_not.find('\n'), std::string::npos);
  }
  EXPECT_EQ(matmul_shader_name("matmul_bf16", V::kNative), "matmul_bf16_native");
  EXPECT_EQ(matmul_shader_name("matmul_bf16", V::kExact), "matmul_bf16");
}

// The products' builds, exact and native, declare DenormPreserve for 32-bit
// floats (with its capability); stripped for a device that cannot keep
// subnormals, the mode, the capability and the extension are gone and
// nothing else is; a shader without them comes back unchanged.
TEST(GpuShaderVariant, TheProductBuildsAskTheDeviceToKeepSubnormals) {
  for (const char* name :
       {"matmul_bf16", "matmul_mxfp4", "matmul_bf16_native", "matmul_mxfp4_native", "kda_recurrence"}) {
    const std::vector<uint32_t> words = spirv_shader(name);
    EXPECT_TRUE(spirv_preserves_f32_denorms(words)) << name;
    const std::vector<uint32_t> caps = capabilities(words);
    EXPECT_NE(std::find(caps.begin(), caps.end(), kSpirvCapabilityDenormPreserve), caps.end()) << name;
    const std::vector<uint32_t> stripped = spirv_without_denorm_preserve(words);
    EXPECT_FALSE(spirv_preserves_f32_denorms(stripped)) << name;
    const std::vector<uint32_t> left = capabilities(stripped);
    EXPECT_EQ(std::find(left.begin(), left.end(), kSpirvCapabilityDenormPreserve), left.end()) << name;
    EXPECT_EQ(left.size(), caps.size() - 1) << name;
    // The mode (4 words), the capability (2) and "SPV_KHR_float_controls" (1 + 6).
    EXPECT_EQ(stripped.size(), words.size() - 13) << name;
  }
  const std::vector<uint32_t> norm = spirv_shader("rms_norm");
  EXPECT_FALSE(spirv_preserves_f32_denorms(norm));
  EXPECT_EQ(spirv_without_denorm_preserve(norm), norm);
}

// lavapipe has the 64-bit types and an unfused fma: the exact build, chosen
// without being asked.
TEST(GpuShaderVariant, LavapipeGetsTheExactBuild) {
  auto device = open_lavapipe_device();
  ASSERT_TRUE(device);
  // lavapipe flushes FP32 subnormals and says so: the native builds run
  // there (the test below) with DenormPreserve dropped.
  EXPECT_FALSE(device->denorm_preserve32());
  GpuBackend gpu(std::move(device), 8, false);
  EXPECT_EQ(gpu.variant(), MatmulShaderVariant::kExact);
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

struct Shape {
  size_t rows, cols, n;
};

TEST(GpuShaderVariant, NativeBuildIsTheCpuOrderWithTheDevicesFma) {
  const ModelGeometry k3 = k3_geometry();
  const size_t hidden = static_cast<size_t>(k3.hidden_size), expert = static_cast<size_t>(k3.moe_intermediate_size);
  // K3's widths (the hidden size, an expert's), a column tail, fewer columns than lanes.
  const Shape bf16_shapes[] = {{67, hidden, 2}, {40, expert, 3}, {33, 100, 2}, {9, 5, 2}};
  const Shape mx_shapes[] = {{67, expert, 2}, {40, hidden, 2}, {17, 64, 3}};
  for (size_t lanes : {size_t{16}, size_t{8}}) {
    SCOPED_TRACE("lanes " + std::to_string(lanes));
    auto device = open_lavapipe_device();
    ASSERT_TRUE(device);
    GpuBackend gpu(std::move(device), lanes, true, 0, MatmulShaderVariant::kNative);
    ASSERT_EQ(gpu.variant(), MatmulShaderVariant::kNative);
    std::mt19937 rng(static_cast<unsigned>(39 + lanes));
    for (const Shape& s : bf16_shapes) {
      const auto w = bf16_weights(rng, s.rows * s.cols);
      const auto x = activations(rng, s.n * s.cols);
      std::vector<float> y(s.n * s.rows, -1.0f);
      ASSERT_TRUE(gpu.bf16(w.data(), s.rows, s.cols, x.data(), s.n, y.data()));
      expect_same_bits(bf16_mul_add_chain(w, s.rows, s.cols, x, s.n, lanes), y,
                       "bf16 " + std::to_string(s.rows) + "x" + std::to_string(s.cols));
    }
    for (const Shape& s : mx_shapes) {
      const auto packed = random_bytes(rng, s.rows * s.cols / 2, 0, 255);
      const auto scales = random_bytes(rng, s.rows * s.cols / 32, 118, 134);
      const auto x = activations(rng, s.n * s.cols);
      std::vector<float> y(s.n * s.rows, -1.0f);
      ASSERT_TRUE(gpu.mxfp4(packed.data(), scales.data(), s.rows, s.cols, x.data(), s.n, y.data()));
      expect_same_bits(mxfp4_mul_add_chain(packed, scales, s.rows, s.cols, x, s.n, lanes), y,
                       "mxfp4 " + std::to_string(s.rows) + "x" + std::to_string(s.cols));
    }
  }
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

// The doctor's rate probe: a positive figure, twice in a row of the same order.
TEST(GpuShaderVariant, RateProbeGivesAFigure) {
  auto device = open_lavapipe_device();
  ASSERT_TRUE(device);
  const double gflops = probe_fp32_gflops(*device);
  EXPECT_GT(gflops, 0.0);
  EXPECT_LT(gflops, 1e6);  // a petaflop from a CPU device would be a timing bug
  EXPECT_EQ(VulkanInstance::validation_errors(), 0u);
}

}  // namespace
}  // namespace k3
