// GpuBackend's KDA recurrence (shaders/kda_recurrence.comp): the heads'
// state on the device (kept there across a layer's sub-batches within a
// span of kept states, gpu_kda_states.cpp; else copied in and back per
// call), the tokens in slices that fit a binding, each slice one dispatch
// continuing the state the last one left. The decays exp(g) are computed
// here with the CPU kernel's kernels::exp_f32 (kernels/kda_step.cpp), so the
// device does only multiplies and adds, each with the CPU's rounding.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "common/error.h"
#include "gpu/compute_pipeline.h"
#include "gpu/gpu_backend.h"
#include "gpu/vulkan_buffer.h"
#include "gpu/vulkan_context.h"
#include "kernels/exp_f32.h"

namespace k3 {
namespace {

// The shader's push constants.
struct KdaShape {
  uint32_t heads, dim, n;
};
constexpr uint32_t kGroupColumns = 64;  // local_size_x

}  // namespace

bool GpuBackend::kda_recurrence(float* S, const float* q, const float* k, const float* v, const float* g,
                                const float* beta, size_t heads, size_t dim, size_t n, float* o) {
  if (heads == 0 || dim == 0 || n == 0) return false;
  const size_t HD = heads * dim, state_bytes = HD * dim * sizeof(float);
  const size_t token_bytes = (4 * HD + heads) * sizeof(float);
  const size_t limit = device_->max_binding_bytes();
  if (state_bytes > limit || token_bytes > limit || heads > UINT32_MAX || dim > UINT32_MAX)
    throw Error(ExitCode::kResource, "gpu: a KDA state of " + std::to_string(heads) + " heads of " +
                                         std::to_string(dim) + "x" + std::to_string(dim) +
                                         " does not fit the device's largest buffer binding");
  if (products_ >= fail_after_) vk_check(VK_ERROR_DEVICE_LOST, "running a KDA recurrence (K3_GPU_FAIL_AFTER)");
  if (products_ >= out_of_memory_after_)
    vk_check(VK_ERROR_OUT_OF_DEVICE_MEMORY, "allocating a KDA recurrence's buffers (K3_GPU_OUT_OF_MEMORY_AFTER)");
  if (!kda_) kda_ = std::make_unique<ComputePipeline>(*device_, "kda_recurrence", 3, sizeof(KdaShape), native_fma_);
  const size_t slice = std::min(n, limit / token_bytes);
  grow(*kda_in_, slice * token_bytes);
  grow(*kda_out_, slice * HD * sizeof(float));
  // S's copy on the device: kept within a span of kept states (copied in
  // at its first call there), else copied in now and back at the end.
  KdaStateSlot& state = kda_state_slot(S, state_bytes);
  state.current = false;  // until every slice has run
  for (size_t t0 = 0; t0 < n; t0 += slice) {
    const size_t tn = std::min(slice, n - t0), span = tn * HD;
    // q, k, v, decay [tn, HD] each, then beta [tn, heads].
    float* in = static_cast<float*>(kda_in_->data());
    std::memcpy(in, q + t0 * HD, span * sizeof(float));
    std::memcpy(in + span, k + t0 * HD, span * sizeof(float));
    std::memcpy(in + 2 * span, v + t0 * HD, span * sizeof(float));
    for (size_t i = 0; i < span; ++i) in[3 * span + i] = kernels::exp_f32(g[t0 * HD + i]);
    std::memcpy(in + 4 * span, beta + t0 * heads, tn * heads * sizeof(float));
    upload_bytes_ += tn * token_bytes;
    const KdaShape shape{static_cast<uint32_t>(heads), static_cast<uint32_t>(dim), static_cast<uint32_t>(tn)};
    kda_->run({state.buffer.get(), kda_in_.get(), kda_out_.get()}, &shape,
              static_cast<uint32_t>((dim + kGroupColumns - 1) / kGroupColumns), static_cast<uint32_t>(heads));
    std::memcpy(o + t0 * HD, kda_out_->data(), span * sizeof(float));
  }
  state.current = true;
  if (!keeping_kda_states_) download_kda_state(state, S, state_bytes);
  ++kda_recurrences_;
  return true;
}

}  // namespace k3
