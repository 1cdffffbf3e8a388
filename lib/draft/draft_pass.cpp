#include "draft/draft_pass.h"

#include <algorithm>

#include "common/error.h"
#include "draft/draft_heads.h"
#include "draft/draft_layer.h"
#include "kernels/rms_norm.h"
#include "model/linear.h"
#include "model/weight_source.h"

namespace k3 {

using kernels::rms_norm;

DSparkModel DSparkModel::load(const std::string& dir) {
  DSparkConfig c = load_dspark_config(dir);
  DSparkWeights w = load_dspark_weights(c, dir);
  return DSparkModel(std::move(c), std::move(w));
}

DSparkModel::DSparkModel(DSparkConfig config, DSparkWeights weights)
    : config_(std::move(config)), weights_(std::move(weights)), rope_(config_) {}

DraftPassResult DSparkModel::propose(WeightSource& target, DraftContext& ctx, int32_t anchor, size_t n,
                                     ThreadPool* pool, bool keep_layer_out) const {
  const DSparkConfig& c = config_;
  const size_t H = c.hidden_size, V = c.vocab_size;
  if (n == 0 || anchor < 0 || anchor >= c.vocab_size)
    throw Error(ExitCode::kInternal, "draft pass without rows or with an anchor outside the vocabulary");
  if (ctx.layers.size() != static_cast<size_t>(c.num_hidden_layers)) ctx.layers.assign(c.num_hidden_layers, {});
  DraftPassResult r;
  std::vector<int32_t> ids(n, c.mask_token_id);
  ids[0] = anchor;
  std::vector<float> h(n * H);
  target.embed(ids.data(), n, h.data());
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    draft_layer_forward(c, weights_.layers[l], rope_, ctx.layers[l], ctx.positions, h.data(), n, pool);
    if (keep_layer_out) r.layer_out.insert(r.layer_out.end(), h.begin(), h.end());
  }
  rms_norm(h.data(), n, H, weights_.final_norm.data(), c.rms_norm_eps, h.data());
  // Base logits through the target's lm_head, block by block as its source
  // delivers it (one read of the head for all rows).
  r.base_logits.resize(n * V);
  const HeadWeights& head = target.acquire_head();
  size_t covered = 0;
  std::vector<float> part;
  target.for_each_head_block(head, [&](int64_t first_row, const Bf16Matrix& W) {
    const size_t r0 = static_cast<size_t>(first_row), rows = static_cast<size_t>(W.rows);
    if (r0 != covered || r0 + rows > V || W.cols != static_cast<int64_t>(H))
      throw Error(ExitCode::kInternal, "lm_head blocks do not tile the vocabulary");
    covered = r0 + rows;
    part.resize(n * rows);
    lin(W, h.data(), n, part.data(), pool);
    for (size_t t = 0; t < n; ++t) std::copy_n(part.data() + t * rows, rows, r.base_logits.data() + t * V + r0);
  });
  target.release_head();
  if (covered != V) throw Error(ExitCode::kInternal, "lm_head blocks do not cover the vocabulary");
  MarkovChain chain = markov_chain_greedy(c, weights_, r.base_logits.data(), n, anchor, pool);
  r.confidence = confidence_logits(c, weights_, h.data(), n, chain.prev);
  r.ids = std::move(chain.ids);
  r.hidden = std::move(h);
  return r;
}

}  // namespace k3
