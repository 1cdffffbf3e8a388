#include "expert_cache/expert_trace_oracle.h"

#include <algorithm>
#include <utility>

namespace k3 {

ExpertTraceOracle::ExpertTraceOracle(WeightSource& inner, std::vector<ExpertRequest> trace, int num_experts)
    : ForwardingWeightSource(inner), trace_(std::move(trace)), num_experts_(num_experts) {}

void ExpertTraceOracle::prefetch_guess(int layer, const std::vector<int>& /*experts*/) {
  // A guess is made while an earlier layer computes, so that layer's call may
  // still come first in the trace: skip one call (at most num_experts pairs),
  // then the call for `layer` is the run of its pairs up to a repeated expert
  // (the next pass's call of a model with one MoE layer).
  size_t i = next_;
  const size_t skip_end = std::min(trace_.size(), next_ + static_cast<size_t>(num_experts_) + 1);
  while (i < skip_end && trace_[i].layer != layer) ++i;
  std::vector<int> truth;
  std::vector<bool> seen(static_cast<size_t>(num_experts_), false);
  if (i == skip_end) i = trace_.size();  // not within reach: another run's trace, no guess
  for (; i < trace_.size() && trace_[i].layer == layer; ++i) {
    const auto e = static_cast<size_t>(trace_[i].expert);
    if (seen[e]) break;
    seen[e] = true;
    truth.push_back(trace_[i].expert);
  }
  inner_.prefetch_guess(layer, truth);
}

void ExpertTraceOracle::for_each_expert(int layer, const std::vector<int>& experts,
                                        const std::function<void(size_t k, const ExpertWeights& w)>& on_ready) {
  next_ += experts.size();
  inner_.for_each_expert(layer, experts, on_ready);
}

}  // namespace k3
