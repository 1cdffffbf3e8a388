#include "draft/verify_policy.h"

#include <algorithm>
#include <cmath>

namespace k3 {

VerifyPolicy::VerifyPolicy(size_t block, VerifyCosts costs, int64_t max_context)
    : block_(block), costs_(costs), max_context_(max_context), offered_(block, 0), accepted_(block, 0) {}

double VerifyPolicy::bytes_per_token(const VerifyCosts& c, const std::vector<double>& p, size_t k) {
  double survive = 1, tokens = 1;
  for (size_t i = 0; i < k; ++i) {
    survive *= p[i];
    tokens += survive;
  }
  const double bytes = c.pass + static_cast<double>(k + 1) * c.per_row + (k > 0 ? c.draft : 0.0);
  return bytes / tokens;
}

size_t VerifyPolicy::choose(const std::vector<float>& confidence, int64_t context_len, size_t max) const {
  if (!drafts_at(context_len)) return 0;
  const size_t n = std::min(max, block_);
  std::vector<double> p(n);
  for (size_t i = 0; i < n; ++i) {
    // Without a confidence head the prior is even odds.
    const double prior = i < confidence.size() ? 1.0 / (1.0 + std::exp(-static_cast<double>(confidence[i]))) : 0.5;
    p[i] =
        (kPriorWeight * prior + static_cast<double>(accepted_[i])) / (kPriorWeight + static_cast<double>(offered_[i]));
  }
  return best_k(costs_, p);
}

size_t VerifyPolicy::best_k(const VerifyCosts& costs, const std::vector<double>& p) {
  size_t best = 0;
  double best_cost = bytes_per_token(costs, p, 0);
  for (size_t k = 1; k <= p.size(); ++k) {
    const double cost = bytes_per_token(costs, p, k);
    if (cost < best_cost) best_cost = cost, best = k;
  }
  return best;
}

void VerifyPolicy::record(size_t verified, size_t accepted) {
  for (size_t i = 0; i < verified && i < block_; ++i) {
    ++offered_[i];
    if (i < accepted) {
      ++accepted_[i];
    } else {
      break;  // positions after the first rejection were not offered on their own merit
    }
  }
}

}  // namespace k3
