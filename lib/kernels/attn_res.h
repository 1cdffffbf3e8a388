// AttnRes: attention over the residual stream's block states.
//
// mix(p, B, proj, norm) with V = [B..., p]: for each v in V,
//   score_v = sum(v * rsqrt(mean(v^2) + eps) * norm.weight * proj.weight),
// probs = softmax(scores), result = sum(probs_v * v). No weight is applied
// to the returned values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace k3::kernels {

// blocks: the stack B, each [n, hidden]; p: the partial sum [n, hidden];
// proj: the BF16 projection row [hidden]; norm: the norm weight [hidden].
// out[n, hidden] (may not alias the inputs). Per token, in a fixed order:
// each multiply and add rounded on its own (compiled without contraction),
// the sums in index order, e^x by exp_f32, so a device can follow it
// (gpu/shaders/attn_res_mix.comp).
// `scratch` holds hidden + blocks.size() + 1 floats (null: allocated here).
void attn_res_mix(const std::vector<const float*>& blocks, const float* p, size_t n, size_t hidden,
                  const uint16_t* proj, const float* norm, float eps, float* out, float* scratch = nullptr);
// attn_res_mix through the calling thread's backend (kernels/compute_backend.h),
// else on the CPU: the chunk's mixes, on the device with it.
void attn_res_mix_on_backend(const std::vector<const float*>& blocks, const float* p, size_t n, size_t hidden,
                             const uint16_t* proj, const float* norm, float eps, float* out, float* scratch = nullptr);

}  // namespace k3::kernels
