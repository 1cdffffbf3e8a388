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

#include "model/weight_source.h"
#include "runtime/expert_trace.h"

namespace k3 {

class ExpertTraceOracle : public WeightSource {
 public:
  // `num_experts`: the model's routed experts per layer (a call names each
  // at most once).
  ExpertTraceOracle(WeightSource& inner, std::vector<ExpertRequest> trace, int num_experts);

  void embed(const int32_t* ids, size_t n, float* out) override { inner_.embed(ids, n, out); }
  const LayerWeights& acquire_layer(int layer) override { return inner_.acquire_layer(layer); }
  void release_layer(int layer) override { inner_.release_layer(layer); }
  void prefetch_experts(int layer, const std::vector<int>& experts) override {
    inner_.prefetch_experts(layer, experts);
  }
  const MoeTrunkWeights* router_ahead(int layer) override { return inner_.router_ahead(layer); }
  // Passes on the experts of the trace's next call for `layer` instead of
  // `experts` (the router's guess).
  void prefetch_guess(int layer, const std::vector<int>& experts) override;
  void for_each_expert(int layer, const std::vector<int>& experts,
                       const std::function<void(size_t k, const ExpertWeights& w)>& on_ready) override;
  const HeadWeights& acquire_head() override { return inner_.acquire_head(); }
  void release_head() override { inner_.release_head(); }
  void for_each_head_block(const HeadWeights& head, const HeadBlock& on_block) override {
    inner_.for_each_head_block(head, on_block);
  }

 private:
  WeightSource& inner_;
  std::vector<ExpertRequest> trace_;
  int num_experts_;
  size_t next_ = 0;  // the trace's first pair of the next for_each_expert call
};

}  // namespace k3
