// Whether a device's fma() rounds once (fused), tested at start-up: on
// Mesa's lavapipe it does not (its results equal a multiply, then an add),
// on an NVIDIA driver it does. The products then use the device's fma, or
// emulate one rounding exactly (shaders/exact_fma.glsl).
#pragma once

namespace k3 {

class VulkanDevice;

// Runs the probe shader on inputs whose fused and unfused results differ
// and compares every output with std::fma's bits.
bool probe_fma_fused(VulkanDevice& device);

}  // namespace k3
