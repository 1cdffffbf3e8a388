// The SPIR-V execution mode DenormPreserve for 32-bit floats
// (SPV_KHR_float_controls): the matrix products' builds declare it
// (shaders/matmul_common.glsl), so a device whose fused fma() runs them
// must keep FP32 subnormals rather than flush them, as the CPU does. A
// device without shaderDenormPreserveFloat32 may not be given the mode; on
// one, only the exact emulation runs (gpu/shader_variant.h), whose
// roundings are integer operations, so the pipeline drops it there.
#pragma once

#include <cstdint>
#include <vector>

namespace k3 {

// SPIR-V's numbers: the execution mode and its capability.
inline constexpr uint32_t kSpirvDenormPreserve = 4459;
inline constexpr uint32_t kSpirvCapabilityDenormPreserve = 4464;

// Whether `words` declare DenormPreserve for 32-bit floats on an entry point.
bool spirv_preserves_f32_denorms(const std::vector<uint32_t>& words);

// `words` without the mode, its capability and the SPV_KHR_float_controls
// extension, for a device that cannot keep subnormals (or lacks the
// extension); a module without them comes back unchanged.
std::vector<uint32_t> spirv_without_denorm_preserve(const std::vector<uint32_t>& words);

}  // namespace k3
