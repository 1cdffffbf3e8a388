// k3-forward --expert-trace: a WeightSource in front of the real one that
// writes every (layer, expert) the model asks for, in the order it asks
// (expert_cache/expert_trace.h's format), so a run of the real model can be
// replayed by k3-bench-expert-cache. Everything else passes through (the
// lookahead's guesses too); the weights and so the output are the wrapped
// source's.
//
// The file is written through an AtomicFileWriter (a temporary created
// exclusively, never through a symlink) and appears only at finish().
#pragma once

#include <memory>
#include <string>

#include "common/atomic_file_writer.h"
#include "model/forwarding_weight_source.h"

namespace k3 {

class ExpertTraceRecorder : public ForwardingWeightSource {
 public:
  // Throws k3::Error(kIo) naming `path` when the temporary cannot be created
  // or something other than a regular file is at `path`.
  ExpertTraceRecorder(WeightSource& inner, const std::string& path);

  void for_each_expert(int layer, const std::vector<int>& experts,
                       const std::function<void(size_t k, const ExpertWeights& w)>& on_ready) override;

  // Publishes the file (fsync and rename); later requests are not recorded.
  void finish();
  uint64_t pairs() const { return pairs_; }

 private:
  std::unique_ptr<AtomicFileWriter> out_;
  uint64_t pairs_ = 0;
};

}  // namespace k3
