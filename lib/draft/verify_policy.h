// How many of a draft pass's drafts to verify (docs/dspark.md, "Verify
// length").
//
// Verifying k drafts costs one target pass over k + 1 rows: the trunk once
// plus, on K3, about one row's worth of routed experts per row (flat
// routing makes the rows' expert sets nearly disjoint), and the draft pass.
// It yields 1 + S_1 + ... + S_k tokens in expectation, S_i being the chance
// that the first i drafts are all accepted. The policy picks the k with the
// fewest bytes per expected token.
//
// S_i = p_1 * ... * p_i, with p_i the chance that draft i is accepted given
// the ones before it were: the confidence head's estimate for that row as a
// prior worth kPriorWeight passes, updated by what this run has measured at
// that position (accepted / offered). Past `max_context` positions the
// policy proposes nothing: published acceptance collapses at long context
// (about 1.0 token per pass at 128K), where a draft only adds cost.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace k3 {

struct VerifyCosts {
  // Any one unit (bytes). Defaults: K3 at the laptop preset, GB per pass
  // (trunk), per verified row (routed experts) and per draft pass.
  double pass = 108.8, per_row = 25.8, draft = 4.6;
};

class VerifyPolicy {
 public:
  static constexpr double kPriorWeight = 4;
  static constexpr int64_t kDefaultMaxContext = 65536;

  VerifyPolicy(size_t block, VerifyCosts costs = {}, int64_t max_context = kDefaultMaxContext);

  // Drafts to verify (0..max) given the pass's confidence logits (one per
  // draft; may be empty: no head) at a context of `context_len` positions.
  size_t choose(const std::vector<float>& confidence, int64_t context_len, size_t max) const;
  // Whether a draft pass is worth running at this context length at all.
  bool drafts_at(int64_t context_len) const { return context_len <= max_context_; }
  // A verification of `verified` drafts kept the first `accepted`.
  void record(size_t verified, size_t accepted);

  // Conditional acceptance per draft position measured so far.
  const std::vector<int64_t>& offered() const { return offered_; }
  const std::vector<int64_t>& accepted() const { return accepted_; }
  int64_t max_context() const { return max_context_; }
  // Expected bytes per generated token when verifying k drafts with
  // per-position conditional acceptance p (p.size() >= k).
  static double bytes_per_token(const VerifyCosts& costs, const std::vector<double>& p, size_t k);
  // The k (0..p.size()) with the fewest bytes per token.
  static size_t best_k(const VerifyCosts& costs, const std::vector<double>& p);

 private:
  size_t block_;
  VerifyCosts costs_;
  int64_t max_context_;
  std::vector<int64_t> offered_, accepted_;
};

}  // namespace k3
