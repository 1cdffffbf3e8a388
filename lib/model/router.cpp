#include "model/router.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels/activations.h"

namespace k3 {

void route_tokens(const ModelConfig& c, const float* router_logits, const float* bias, size_t n, int32_t* experts,
                  float* weights, float* scratch, int32_t* order) {
  const size_t E = c.num_experts, k = c.num_experts_per_token;
  std::vector<float> own_scratch;
  std::vector<int32_t> own_order;
  if (!scratch) {
    own_scratch.resize(2 * E);
    scratch = own_scratch.data();
  }
  if (!order) {
    own_order.resize(E);
    order = own_order.data();
  }
  float* s = scratch;
  float* choice = scratch + E;
  for (size_t t = 0; t < n; ++t) {
    for (size_t e = 0; e < E; ++e) {
      s[e] = kernels::sigmoid(router_logits[t * E + e]);
      choice[e] = s[e] + bias[e];
    }
    std::iota(order, order + E, 0);
    // Strict total order: higher choice first, equal choices by lower id.
    std::partial_sort(order, order + k, order + E,
                      [&](int32_t a, int32_t b) { return choice[a] > choice[b] || (choice[a] == choice[b] && a < b); });
    float sum = 0;
    for (size_t j = 0; j < k; ++j) {
      experts[t * k + j] = order[j];
      weights[t * k + j] = s[order[j]];
      sum += s[order[j]];
    }
    for (size_t j = 0; j < k; ++j) {
      if (c.moe_renormalize && k > 1) weights[t * k + j] /= (sum + 1e-20f);
      weights[t * k + j] *= c.routed_scaling_factor;
    }
  }
}

}  // namespace k3
