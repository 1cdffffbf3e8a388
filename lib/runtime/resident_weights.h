// A WeightSource that holds every tensor the engine reads in RAM.
//
// The simplest source: the checkpoint is validated against the config, then
// every tensor is read once with pread into aligned buffers and served from
// there. It needs RAM for the whole text model (fine for small checkpoints
// and 2+ TB machines); the streaming sources exist for everything else.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/config.h"
#include "model/weight_source.h"

namespace k3 {

class Checkpoint;

class ResidentWeights : public WeightSource {
 public:
  // Validates `checkpoint` against `config` (kBadModel naming the tensor),
  // says on `log` (may be null) how many bytes it will hold, refuses with
  // kResource when that exceeds the memory available, then reads everything.
  // MXFP4 scale bytes >= 254 are refused naming the tensor.
  ResidentWeights(const ModelConfig& config, const Checkpoint& checkpoint, std::ostream* log);
  ~ResidentWeights() override;

  // Bytes of tensor data the source holds once loaded.
  uint64_t resident_bytes() const { return resident_bytes_; }

  void embed(const int32_t* ids, size_t n, float* out) override;
  const LayerWeights& acquire_layer(int layer) override;
  void release_layer(int layer) override {}
  void for_each_expert(int layer, const std::vector<int>& experts,
                       const std::function<void(size_t k, const ExpertWeights& w)>& on_ready) override;
  const HeadWeights& acquire_head() override { return head_; }
  void release_head() override {}

 private:
  struct Buffer;
  const void* tensor(const std::string& name) const;

  ModelConfig config_;
  uint64_t resident_bytes_ = 0;
  std::unordered_map<std::string, std::unique_ptr<Buffer>> buffers_;
  Bf16Matrix embed_;
  std::vector<LayerWeights> layers_;
  std::vector<std::vector<ExpertWeights>> experts_;  // [layer][expert], empty for dense layers
  HeadWeights head_;
};

}  // namespace k3
