// GpuBackend's KDA gates (shaders/kda_gate.comp): each token's graw row and
// beta's raw values go in the KDA recurrence's input buffer, side by side,
// and come back as g and beta in place; A_log and dt_bias where a
// product's weights go. A slice takes H*D + H floats a token, no more of
// that buffer than the recurrence of the same tokens (4 H*D + H), so the
// device plan's bound for the KDA buffers holds. Both forms of the gate
// run here: the lower bound's (K3's) and the softplus one.
#include <algorithm>
#include <cstring>
#include <memory>

#include "common/error.h"
#include "gpu/compute_pipeline.h"
#include "gpu/gpu_backend.h"
#include "gpu/vulkan_buffer.h"
#include "gpu/vulkan_context.h"

namespace k3 {
namespace {

// kda_gate.comp's push constants.
struct GateShape {
  uint32_t heads, dim, tokens, has_lower_bound, lower_bound_bits;
};
constexpr uint32_t kGroupValues = 64;  // local_size_x
constexpr size_t kMaxGroups = 65535;   // Vulkan's least maxComputeWorkGroupCount

}  // namespace

bool GpuBackend::kda_gates(float* g, float* beta, size_t tokens, size_t heads, size_t dim, const float* A_log,
                           const float* dt_bias, const kernels::KdaGateBound& bound) {
  // The shader's exact steps need float64 and int64.
  if (tokens == 0 || heads == 0 || dim == 0 || !device_->has_float64()) return false;
  const size_t hd = heads * dim, stride = hd + heads, limit = device_->max_binding_bytes();
  if (stride > UINT32_MAX || stride * sizeof(float) > limit || (heads + hd) * sizeof(float) > limit) return false;
  if (products_ >= fail_after_) vk_check(VK_ERROR_DEVICE_LOST, "running the KDA gates (K3_GPU_FAIL_AFTER)");
  if (!kda_gate_) kda_gate_ = std::make_unique<ComputePipeline>(*device_, "kda_gate", 2, sizeof(GateShape), 0);
  grow(*stages_[0].weights, (heads + hd) * sizeof(float));
  float* params = static_cast<float*>(stages_[0].weights->data());
  std::memcpy(params, A_log, heads * sizeof(float));
  std::memcpy(params + heads, dt_bias, hd * sizeof(float));
  upload_bytes_ += (heads + hd) * sizeof(float);
  uint32_t lb_bits;
  std::memcpy(&lb_bits, &bound.value, sizeof lb_bits);
  const size_t slice = std::min({tokens, limit / (stride * sizeof(float)), kMaxGroups});
  for (size_t t0 = 0; t0 < tokens; t0 += slice) {
    const size_t tn = std::min(slice, tokens - t0);
    grow(*kda_in_, tn * stride * sizeof(float));
    float* in = static_cast<float*>(kda_in_->data());
    for (size_t t = 0; t < tn; ++t) {
      std::memcpy(in + t * stride, g + (t0 + t) * hd, hd * sizeof(float));
      std::memcpy(in + t * stride + hd, beta + (t0 + t) * heads, heads * sizeof(float));
    }
    upload_bytes_ += tn * stride * sizeof(float);
    const GateShape shape{static_cast<uint32_t>(heads), static_cast<uint32_t>(dim), static_cast<uint32_t>(tn),
                          bound.has ? 1u : 0u, lb_bits};
    kda_gate_->run({kda_in_.get(), stages_[0].weights.get()}, &shape,
                   static_cast<uint32_t>((stride + kGroupValues - 1) / kGroupValues), static_cast<uint32_t>(tn));
    for (size_t t = 0; t < tn; ++t) {
      std::memcpy(g + (t0 + t) * hd, in + t * stride, hd * sizeof(float));
      std::memcpy(beta + (t0 + t) * heads, in + t * stride + hd, heads * sizeof(float));
    }
  }
  ++kda_gates_;
  return true;
}

}  // namespace k3
