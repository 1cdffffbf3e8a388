#include "kernels/attn_res.h"

#include <algorithm>

#include "kernels/bf16.h"
#include "kernels/compute_backend.h"
#include "kernels/exp_f32.h"
#include "kernels/rms_norm.h"

namespace k3::kernels {

void attn_res_mix(const std::vector<const float*>& blocks, const float* p, size_t n, size_t hidden,
                  const uint16_t* proj, const float* norm, float eps, float* out, float* scratch) {
  const size_t nv = blocks.size() + 1;
  std::vector<float> own;
  if (!scratch) {
    own.resize(hidden + nv);
    scratch = own.data();
  }
  // The key weight norm * proj is the same for every value and token.
  float* key_weight = scratch;
  for (size_t c = 0; c < hidden; ++c) key_weight[c] = norm[c] * bf16_to_f32(proj[c]);
  float* scores = scratch + hidden;
  for (size_t t = 0; t < n; ++t) {
    auto value = [&](size_t j) { return (j < blocks.size() ? blocks[j] : p) + t * hidden; };
    for (size_t j = 0; j < nv; ++j) {
      const float* v = value(j);
      const float r = rms_scale(v, hidden, eps);
      float s = 0;
      for (size_t c = 0; c < hidden; ++c) s += (v[c] * r) * key_weight[c];
      scores[j] = s;
    }
    const float mx = *std::max_element(scores, scores + nv);
    float sum = 0;
    for (size_t j = 0; j < nv; ++j) {
      scores[j] = exp_f32(scores[j] - mx);
      sum += scores[j];
    }
    float* o = out + t * hidden;
    std::fill(o, o + hidden, 0.0f);
    for (size_t j = 0; j < nv; ++j) {
      const float prob = scores[j] / sum;
      const float* v = value(j);
      for (size_t c = 0; c < hidden; ++c) o[c] += prob * v[c];
    }
  }
}

void attn_res_mix_on_backend(const std::vector<const float*>& blocks, const float* p, size_t n, size_t hidden,
                             const uint16_t* proj, const float* norm, float eps, float* out, float* scratch) {
  ComputeBackend* backend = current_compute_backend();
  if (backend && backend->attn_res_mix(blocks.data(), blocks.size(), p, n, hidden, proj, norm, eps, out)) return;
  attn_res_mix(blocks, p, n, hidden, proj, norm, eps, out, scratch);
}

}  // namespace k3::kernels
