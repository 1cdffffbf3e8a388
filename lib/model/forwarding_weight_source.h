// A WeightSource in front of another that passes every call through: the
// base of the sources that watch or steer a run's requests without changing
// its weights (k3-forward --expert-trace's recorder, --expert-lookahead-from's
// oracle). A subclass overrides only what it adds.
#pragma once

#include "model/weight_source.h"

namespace k3 {

class ForwardingWeightSource : public WeightSource {
 public:
  explicit ForwardingWeightSource(WeightSource& inner) : inner_(inner) {}

  void embed(const int32_t* ids, size_t n, float* out) override { inner_.embed(ids, n, out); }
  const LayerWeights& acquire_layer(int layer) override { return inner_.acquire_layer(layer); }
  void release_layer(int layer) override { inner_.release_layer(layer); }
  void prefetch_experts(int layer, const std::vector<int>& experts) override {
    inner_.prefetch_experts(layer, experts);
  }
  const MoeTrunkWeights* router_ahead(int layer) override { return inner_.router_ahead(layer); }
  void prefetch_guess(int layer, const std::vector<int>& experts) override { inner_.prefetch_guess(layer, experts); }
  void for_each_expert(int layer, const std::vector<int>& experts,
                       const std::function<void(size_t k, const ExpertWeights& w)>& on_ready) override {
    inner_.for_each_expert(layer, experts, on_ready);
  }
  const HeadWeights& acquire_head() override { return inner_.acquire_head(); }
  void release_head() override { inner_.release_head(); }
  void for_each_head_block(const HeadWeights& head, const HeadBlock& on_block) override {
    inner_.for_each_head_block(head, on_block);
  }

 protected:
  WeightSource& inner_;
};

}  // namespace k3
