// Builds the weight views (model/weights.h) of a layer, an expert or the head
// from wherever the tensor bytes live. Every WeightSource uses these, so the
// mapping from checkpoint names to the model's weights exists once. Shapes
// come from the config; the bytes must already have been checked against it
// (validate_checkpoint).
#pragma once

#include <functional>
#include <string>

#include "model/config.h"
#include "model/weights.h"

namespace k3 {

// Returns the bytes of the tensor with this full checkpoint name.
using TensorLookup = std::function<const void*(const std::string& name)>;

LayerWeights bind_layer_weights(const ModelConfig& config, int layer, const TensorLookup& lookup);
ExpertWeights bind_expert_weights(const ModelConfig& config, int layer, int expert, const TensorLookup& lookup);
HeadWeights bind_head_weights(const ModelConfig& config, const TensorLookup& lookup);

}  // namespace k3
