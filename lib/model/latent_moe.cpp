#include "model/latent_moe.h"

#include <algorithm>
#include <vector>

#include "model/linear.h"
#include "model/rms_norm.h"
#include "model/router.h"
#include "model/situ_mlp.h"

namespace k3 {

void latent_moe_forward(const ModelConfig& c, int layer, const MoeTrunkWeights& w, WeightSource& source,
                        const float* x, size_t n, float* out, ThreadPool* pool) {
  const size_t hidden = c.hidden_size, latent = c.routed_expert_hidden_size, E = c.num_experts;
  const size_t k = c.num_experts_per_token;
  const SituParams situ = SituParams::from(c);

  // Route every token on x.
  std::vector<float> logits(n * E), weights(n * k);
  std::vector<int32_t> chosen(n * k);
  lin(w.router, x, n, logits.data(), pool);
  route_tokens(c, logits.data(), w.router_bias.data, n, chosen.data(), weights.data());

  // The distinct experts of the batch (ascending id) and, per expert, the
  // rows that chose it (ascending token).
  std::vector<int> experts;
  std::vector<std::vector<size_t>> rows_of(E);
  for (size_t i = 0; i < n * k; ++i) rows_of[chosen[i]].push_back(i / k);
  for (size_t e = 0; e < E; ++e)
    if (!rows_of[e].empty()) experts.push_back(static_cast<int>(e));
  std::vector<size_t> slot_of(E, 0);
  for (size_t s = 0; s < experts.size(); ++s) slot_of[experts[s]] = s;

  // The reads of experts that are not resident start now, while the latent
  // projection and the shared experts (which do not depend on routing)
  // compute; the shared result is added at the end exactly as before.
  source.prefetch_experts(layer, experts);
  std::vector<float> z(n * latent);
  lin(w.latent_down, x, n, z.data(), pool);
  std::vector<float> shared(n * hidden);
  situ_mlp(w.shared, situ, x, n, shared.data(), pool);

  // Each expert runs once on its rows into its own buffer.
  std::vector<std::vector<float>> expert_out(experts.size());
  source.for_each_expert(layer, experts, [&](size_t s, const ExpertWeights& ew) {
    const std::vector<size_t>& rows = rows_of[experts[s]];
    std::vector<float> in(rows.size() * latent);
    for (size_t r = 0; r < rows.size(); ++r)
      std::copy(z.data() + rows[r] * latent, z.data() + (rows[r] + 1) * latent, in.data() + r * latent);
    expert_out[s].resize(rows.size() * latent);
    situ_mlp(ew, situ, in.data(), rows.size(), expert_out[s].data(), pool);
  });

  // Combine per token in the router's order (fixed, independent of arrival).
  std::vector<float> y(n * latent, 0.0f);
  for (size_t t = 0; t < n; ++t) {
    float* yt = y.data() + t * latent;
    for (size_t j = 0; j < k; ++j) {
      const int e = chosen[t * k + j];
      const std::vector<size_t>& rows = rows_of[e];
      const size_t r = static_cast<size_t>(std::lower_bound(rows.begin(), rows.end(), t) - rows.begin());
      const float* ye = expert_out[slot_of[e]].data() + r * latent;
      const float we = weights[t * k + j];
      for (size_t d = 0; d < latent; ++d) yt[d] += we * ye[d];
    }
  }
  if (c.latent_moe_use_norm) rms_norm(y.data(), n, latent, w.latent_norm.data, c.rms_norm_eps, y.data());
  lin(w.latent_up, y.data(), n, out, pool);

  for (size_t i = 0; i < n * hidden; ++i) out[i] += shared[i];
}

}  // namespace k3
