// The tensors a config implies: name, dtype and shape of every tensor the
// text engine reads, grouped by what it belongs to. The checkpoint is
// validated against this list before any compute (a disagreement names the
// tensor, the expected and the found shape/dtype), and k3-pack uses the same
// list to decide what goes in the trunk.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/dtype.h"
#include "model/config.h"

namespace k3 {

class Checkpoint;

enum class TensorGroup : uint8_t {
  kEmbedding,     // embed_tokens.weight
  kHead,          // final norm, output AttnRes, lm_head
  kLayerTrunk,    // every non-routed-expert tensor of layer `layer`
  kRoutedExpert,  // experts.{expert}.* of layer `layer`
};

struct ExpectedTensor {
  std::string name;  // full checkpoint name, with prefix
  DType dtype;
  std::vector<uint64_t> shape;
  TensorGroup group;
  int layer = -1;   // for kLayerTrunk / kRoutedExpert
  int expert = -1;  // for kRoutedExpert
};

// Every tensor the engine reads, in a stable order: embedding, layers 0..n-1
// (trunk tensors, then experts 0..E-1), head.
std::vector<ExpectedTensor> expected_tensors(const ModelConfig& config);

// The routed-expert tensor names of one expert (no dtype/shape), for hot paths
// that must not build the whole manifest.
std::string expert_tensor_prefix(const ModelConfig& config, int layer, int expert);

// Throws k3::Error(kBadModel) on the first tensor that is missing or whose
// dtype/shape disagrees, naming the tensor, what was expected and what was found.
void validate_checkpoint(const ModelConfig& config, const Checkpoint& checkpoint);

}  // namespace k3
