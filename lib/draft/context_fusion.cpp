#include "draft/context_fusion.h"

#include "common/error.h"
#include "kernels/rms_norm.h"
#include "model/linear.h"

namespace k3 {

using kernels::rms_norm;

void DraftContext::truncate(const DSparkConfig& c, int64_t to) {
  if (to < 0 || to > positions) throw Error(ExitCode::kInternal, "draft context truncated past its positions");
  const size_t stride = static_cast<size_t>(c.kv_stride());
  for (auto& l : layers) l.resize(static_cast<size_t>(to) * stride);
  positions = to;
}

void fuse_context(const DSparkConfig& c, const DSparkWeights& w, const YarnRope& rope, const float* taps, size_t n,
                  DraftContext& ctx, ThreadPool* pool, std::vector<float>* fused) {
  if (n == 0) return;
  const size_t H = c.hidden_size, kvl = c.kv_lora_rank, stride = c.kv_stride();
  if (ctx.layers.size() != static_cast<size_t>(c.num_hidden_layers)) ctx.layers.assign(c.num_hidden_layers, {});
  std::vector<float> cf(n * H), kv(n * stride);
  lin(w.context_proj, taps, n, cf.data(), pool);
  rms_norm(cf.data(), n, H, w.context_norm.data(), c.rms_norm_eps, cf.data());
  const size_t p0 = static_cast<size_t>(ctx.positions);
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const DraftLayerWeights& L = w.layers[l];
    lin(L.kv_a_proj_with_mqa, cf.data(), n, kv.data(), pool);
    std::vector<float>& cache = ctx.layers[l];
    cache.resize((p0 + n) * stride);
    for (size_t t = 0; t < n; ++t) {
      float* dst = cache.data() + (p0 + t) * stride;
      rms_norm(kv.data() + t * stride, 1, kvl, L.kv_a_layernorm.data(), c.rms_norm_eps, dst);
      std::copy(kv.data() + t * stride + kvl, kv.data() + (t + 1) * stride, dst + kvl);
      rope.rotate(dst + kvl, static_cast<int64_t>(p0 + t));
    }
  }
  ctx.positions += static_cast<int64_t>(n);
  if (fused) *fused = std::move(cf);
}

}  // namespace k3
