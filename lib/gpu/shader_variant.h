// Which build of the matrix-product shaders a device runs
// (shaders/matmul_common.glsl builds two): the exact one declares Float64
// and Int64 (its emulated fma needs them), so a device without
// shaderFloat64/shaderInt64 cannot even create its pipeline; the native one
// uses the device's fma() and float arithmetic only, exact where that fma is
// fused. Both rely on the device keeping FP32 subnormals wherever they use
// its float arithmetic (the exact build's NATIVE_FMA path, the native
// build), so a device without shaderDenormPreserveFloat32 runs the
// emulation or nothing. A pure function of the probed fma and the device's
// features, so the choice is tested without such a device.
#pragma once

#include <string>

namespace k3 {

struct GpuFeatures {
  bool fma_fused = false;  // the start-up probe (fma_probe.h)
  bool float64 = false;    // shaderFloat64
  bool int64 = false;      // shaderInt64
  // shaderDenormPreserveFloat32 (VkPhysicalDeviceFloatControlsProperties):
  // the device can keep FP32 subnormals, as the shaders then ask it to.
  bool denorm_preserve32 = false;
};

enum class MatmulShaderVariant {
  kExact,   // NAME.spv: the fused fma where there is one (NATIVE_FMA), else emulated
  kNative,  // NAME_native.spv: the device's fused fma, no 64-bit types
  kNone,    // neither gives the CPU's bits on this device
};

struct MatmulShaderChoice {
  MatmulShaderVariant variant = MatmulShaderVariant::kNone;
  bool native_fma = false;  // the exact build's NATIVE_FMA: the device's fused fma() and float arithmetic
  std::string why_not;      // for kNone: why no variant is exact here (one clause)
};

// A fused device that keeps subnormals, with 64-bit types, keeps the exact
// build (its native path: the same bits, and MXFP4 weights still decoded
// with integer roundings); without them it runs the native build. An
// unfused device, or a fused one that may flush subnormals, needs the
// emulation, so Float64 and Int64, or nothing is exact.
MatmulShaderChoice choose_matmul_shader(const GpuFeatures& features);

// The embedded shader's name for `base` ("matmul_bf16") in `variant`.
std::string matmul_shader_name(const std::string& base, MatmulShaderVariant variant);

}  // namespace k3
