// How fast a device multiplies and adds in FP32: k3-doctor's rate probe,
// whose figure it sets against this CPU's measured prefill rate to say
// whether --gpu helps. A fixed shader of independent fma() chains
// (shaders/fma_rate.comp), the device's own fma whether fused or not, so on
// a device whose fma k3 must emulate the figure is what the hardware does,
// not what k3's products would get.
#pragma once

namespace k3 {

class VulkanDevice;

// GFLOP/s (2 a fma) of the fastest of a few dispatches, each grown until it
// takes a few milliseconds (or reaches a cap): tens of ms on a CPU device,
// a few on a GPU.
double probe_fp32_gflops(VulkanDevice& device);

}  // namespace k3
