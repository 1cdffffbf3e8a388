// The compute shaders (lib/gpu/shaders/*.comp), compiled to SPIR-V by glslc
// at build time and embedded in the library (lib/CMakeLists.txt).
#pragma once

#include <cstdint>
#include <vector>

namespace k3 {

// The SPIR-V words of shader `name` ("matmul_bf16", "matmul_mxfp4", their
// native-fma builds "matmul_bf16_native" and "matmul_mxfp4_native",
// "fma_probe", "fma_rate", "rms_norm", "situ"). Throws Error(kInternal) for a
// name not built in.
std::vector<uint32_t> spirv_shader(const char* name);

}  // namespace k3
