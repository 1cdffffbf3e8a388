#include "gpu/fma_probe.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gpu/compute_pipeline.h"
#include "gpu/vulkan_buffer.h"
#include "gpu/vulkan_context.h"

namespace k3 {

bool probe_fma_fused(VulkanDevice& device) {
  constexpr uint32_t kCount = 256;
  std::vector<float> a(kCount), b(kCount), c(kCount);
  // a * b = 1 + 2^-11 + 2^-24 exactly; rounded first it loses the 2^-24,
  // so fma(a, b, -(1 + 2^-11)) is 2^-24 fused and 0 unfused.
  a[0] = b[0] = 1.0f + std::ldexp(1.0f, -12);
  c[0] = -(1.0f + std::ldexp(1.0f, -11));
  // And products of a BF16-like weight and an activation added to a
  // running sum, as in the matrix products.
  std::mt19937 rng(39);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (uint32_t i = 1; i < kCount; ++i) {
    a[i] = u(rng);
    b[i] = u(rng);
    c[i] = u(rng) * 4.0f;
  }
  VulkanBuffer ba(device), bb(device), bc(device), out(device);
  for (VulkanBuffer* buf : {&ba, &bb, &bc, &out}) buf->reserve(kCount * sizeof(float));
  std::memcpy(ba.data(), a.data(), kCount * sizeof(float));
  std::memcpy(bb.data(), b.data(), kCount * sizeof(float));
  std::memcpy(bc.data(), c.data(), kCount * sizeof(float));
  ComputePipeline probe(device, "fma_probe", 4, sizeof(uint32_t), 0);
  probe.run({&ba, &bb, &bc, &out}, &kCount, (kCount + 63) / 64, 1);
  const float* got = static_cast<const float*>(out.data());
  for (uint32_t i = 0; i < kCount; ++i) {
    const float want = std::fma(a[i], b[i], c[i]);
    if (std::memcmp(&want, &got[i], sizeof(float)) != 0) return false;
  }
  return true;
}

}  // namespace k3
