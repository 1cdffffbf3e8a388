// k3-forward --expert-lookahead-from TRACE: --expert-lookahead with guesses
// that are always right, to measure the most the lookahead can give on a
// disk (docs/memory.md). A WeightSource in front of the real one that
// answers each guess (prefetch_guess) with the experts the layer will in fact
// ask for, taken from a trace of this same run recorded earlier with
// --expert-trace (same model, prompt and flags, so the same requests in the
// same order). A trace of another run only makes the guesses wrong: guesses
// change what is read ahead, never the output.
#pragma once

#include <vector>

#include "expert_cache/expert_trace.h"
#include "model/forwarding_weight_source.h"

namespace k3 {

class ExpertTraceOracle : public ForwardingWeightSource {
 public:
  // `num_experts`: the model's routed experts per layer (a call names each
  // at most once).
  ExpertTraceOracle(WeightSource& inner, std::vector<ExpertRequest> trace, int num_experts);

  // Passes on the experts of the trace's next call for `layer` instead of
  // `experts` (the router's guess).
  void prefetch_guess(int layer, const std::vector<int>& experts) override;
  void for_each_expert(int layer, const std::vector<int>& experts,
                       const std::function<void(size_t k, const ExpertWeights& w)>& on_ready) override;

 private:
  std::vector<ExpertRequest> trace_;
  int num_experts_;
  size_t next_ = 0;  // the trace's first pair of the next for_each_expert call
};

}  // namespace k3
