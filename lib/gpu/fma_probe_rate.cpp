#include "gpu/fma_probe_rate.h"

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "gpu/compute_pipeline.h"
#include "gpu/vulkan_buffer.h"
#include "gpu/vulkan_context.h"

namespace k3 {
namespace {

// shaders/fma_rate.comp: 8 chains of `kIterations` fma per invocation, 64
// invocations a workgroup.
constexpr uint32_t kIterations = 1024;
constexpr double kFlopsPerInvocation = 8.0 * 2.0 * kIterations;
constexpr uint32_t kGroupSize = 64;
constexpr uint32_t kMaxGroupsX = 1024;     // well within maxComputeWorkGroupCount (>= 65535)
constexpr uint32_t kMaxGroups = 1u << 18;  // 275 GFLOP: ~5 ms at 60 TFLOP/s
constexpr double kLongEnough = 0.004;      // seconds a timed dispatch should take

}  // namespace

double probe_fp32_gflops(VulkanDevice& device) {
  VulkanBuffer out(device);
  out.reserve(16);
  ComputePipeline pipeline(device, "fma_rate", 1, sizeof(uint32_t), 0);
  double best = 0;
  uint32_t groups = 16;
  for (int timed = 0; timed < 3;) {
    const uint32_t x = std::min(groups, kMaxGroupsX), y = groups / x;
    const auto start = std::chrono::steady_clock::now();
    pipeline.run({&out}, &kIterations, x, y);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (seconds < kLongEnough && groups < kMaxGroups) {
      groups *= 2;
      continue;
    }
    // Long enough (or as large as allowed): time it again, keep the fastest.
    const double flops = static_cast<double>(x) * y * kGroupSize * kFlopsPerInvocation;
    best = std::max(best, flops / std::max(seconds, 1e-9) / 1e9);
    ++timed;
  }
  return best;
}

}  // namespace k3
