#include "gpu/shader_variant.h"

namespace k3 {

MatmulShaderChoice choose_matmul_shader(const GpuFeatures& f) {
  const bool wide = f.float64 && f.int64;
  const bool native = f.fma_fused && f.denorm_preserve32;
  if (wide) return {MatmulShaderVariant::kExact, native, ""};
  if (native) return {MatmulShaderVariant::kNative, true, ""};
  const std::string lacks = !f.float64 && !f.int64 ? "shaderFloat64 and shaderInt64"
                            : !f.float64           ? "shaderFloat64"
                                                   : "shaderInt64";
  const std::string why =
      f.fma_fused ? "it may flush FP32 subnormals (no shaderDenormPreserveFloat32)" : "its fma() is not fused";
  return {MatmulShaderVariant::kNone, false,
          why + " and it lacks " + lacks + " to emulate every rounding, so its products cannot equal the CPU's"};
}

std::string matmul_shader_name(const std::string& base, MatmulShaderVariant variant) {
  return variant == MatmulShaderVariant::kNative ? base + "_native" : base;
}

}  // namespace k3
