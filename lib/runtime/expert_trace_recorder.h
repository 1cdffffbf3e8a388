// k3-forward --expert-trace: a WeightSource in front of the real one that
// writes every (layer, expert) the model asks for, in the order it asks
// (runtime/expert_trace.h's format), so a run of the real model can be
// replayed by k3-bench-expert-cache. Everything else passes through; the
// weights and so the output are the wrapped source's.
//
// The file is written through an AtomicFileWriter (a temporary created
// exclusively, never through a symlink) and appears only at finish().
#pragma once

#include <memory>
#include <string>

#include "common/atomic_file_writer.h"
#include "model/weight_source.h"

namespace k3 {

class ExpertTraceRecorder : public WeightSource {
 public:
  // Throws k3::Error(kIo) naming `path` when the temporary cannot be created
  // or something other than a regular file is at `path`.
  ExpertTraceRecorder(WeightSource& inner, const std::string& path);

  void embed(const int32_t* ids, size_t n, float* out) override { inner_.embed(ids, n, out); }
  const LayerWeights& acquire_layer(int layer) override { return inner_.acquire_layer(layer); }
  void release_layer(int layer) override { inner_.release_layer(layer); }
  void prefetch_experts(int layer, const std::vector<int>& experts) override {
    inner_.prefetch_experts(layer, experts);
  }
  // Recording leaves --expert-lookahead's guesses on.
  const MoeTrunkWeights* router_ahead(int layer) override { return inner_.router_ahead(layer); }
  void prefetch_guess(int layer, const std::vector<int>& experts) override { inner_.prefetch_guess(layer, experts); }
  void for_each_expert(int layer, const std::vector<int>& experts,
                       const std::function<void(size_t k, const ExpertWeights& w)>& on_ready) override;
  const HeadWeights& acquire_head() override { return inner_.acquire_head(); }
  void release_head() override { inner_.release_head(); }
  void for_each_head_block(const HeadWeights& head, const HeadBlock& on_block) override {
    inner_.for_each_head_block(head, on_block);
  }

  // Publishes the file (fsync and rename); later requests are not recorded.
  void finish();
  uint64_t pairs() const { return pairs_; }

 private:
  WeightSource& inner_;
  std::unique_ptr<AtomicFileWriter> out_;
  uint64_t pairs_ = 0;
};

}  // namespace k3
