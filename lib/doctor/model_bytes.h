// How many bytes of weights a model has, split the way k3-forward reads
// them: the trunk (everything but routed experts) and the routed experts.
//
// Computed from a ModelConfig, so the same arithmetic serves the real K3
// (model/k3_geometry.h's k3_reference_config()) and any checkpoint given with
// --model.
#pragma once

#include <cstdint>
#include <string>

#include "model/config.h"
#include "model/k3_geometry.h"  // k3_reference_config(), kK3CheckpointBytes

namespace k3::doctor {

struct ModelBytes {
  uint64_t embedding = 0;                // embed_tokens: only one row is read per token
  uint64_t head = 0;                     // final norm, output AttnRes, lm_head
  uint64_t layers_trunk = 0;             // every layer's non-routed-expert tensors
  uint64_t largest_moe_layer_trunk = 0;  // the streaming unit of a typical layer
  uint64_t one_expert = 0;               // w1 + w3 + w2 of one routed expert
  int moe_layers = 0;
  int num_experts = 0;
  int experts_per_token = 0;

  uint64_t trunk() const { return embedding + head + layers_trunk; }
  uint64_t all_experts() const { return one_expert * num_experts * static_cast<uint64_t>(moe_layers); }
  // Trunk bytes a token must touch: all but the embedding table.
  uint64_t trunk_per_token() const { return head + layers_trunk; }
  // Routed-expert bytes a token touches when nothing is cached.
  uint64_t experts_per_token_bytes() const {
    return one_expert * experts_per_token * static_cast<uint64_t>(moe_layers);
  }
};

// Sizes of every tensor model/tensor_manifest's expected_tensors lists.
ModelBytes model_bytes_from_config(const ModelConfig& config);

}  // namespace k3::doctor
