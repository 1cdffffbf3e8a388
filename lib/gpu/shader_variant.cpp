#include "gpu/shader_variant.h"

namespace k3 {

MatmulShaderChoice choose_matmul_shader(const GpuFeatures& f) {
  const bool wide = f.float64 && f.int64;
  if (wide) return {MatmulShaderVariant::kExact, ""};
  if (f.fma_fused) return {MatmulShaderVariant::kNative, ""};
  const std::string lacks = !f.float64 && !f.int64 ? "shaderFloat64 and shaderInt64"
                            : !f.float64           ? "shaderFloat64"
                                                   : "shaderInt64";
  return {MatmulShaderVariant::kNone,
          "its fma() is not fused and it lacks " + lacks + " to emulate one, so its products cannot equal the CPU's"};
}

std::string matmul_shader_name(const std::string& base, MatmulShaderVariant variant) {
  return variant == MatmulShaderVariant::kNative ? base + "_native" : base;
}

}  // namespace k3
