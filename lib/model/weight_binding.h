// Builds the weight views (model/weights.h) of a layer, an expert or the head
// from wherever the tensor bytes live. Every WeightSource uses these, so the
// mapping from checkpoint names to the model's weights exists once. Shapes
// come from the config; the bytes must already have been checked against it
// (validate_checkpoint).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/weights.h"

namespace k3 {

// Returns the bytes of the tensor with this full checkpoint name.
using TensorLookup = std::function<const void*(const std::string& name)>;

// The view of a BF16 matrix the forward pass reads through lin() alone, so a
// streaming source may hand it over in row blocks (Bf16Matrix::blocks).
using RowMatrixLookup = std::function<Bf16Matrix(const std::string& name, int64_t rows, int64_t cols)>;

// Without `row_lookup`, every tensor comes from `lookup`. With it, the
// matrices used through lin() alone come from `row_lookup`, in the order the
// forward pass uses them; the rest (norms, the short-conv weights, the
// AttnRes projections, MLA's kv_b_proj, read element by element) from
// `lookup` and must be in memory while the layer runs.
LayerWeights bind_layer_weights(const ModelConfig& config, int layer, const TensorLookup& lookup,
                                const RowMatrixLookup* row_lookup = nullptr);

// The matrices of layer `layer` a source may stream in row blocks, in the
// order the forward pass uses them (one lin() after another).
struct RowMatrix {
  std::string name;
  int64_t rows = 0, cols = 0;
};
std::vector<RowMatrix> layer_row_matrices(const ModelConfig& config, int layer);
ExpertWeights bind_expert_weights(const ModelConfig& config, int layer, int expert, const TensorLookup& lookup);
HeadWeights bind_head_weights(const ModelConfig& config, const TensorLookup& lookup);

}  // namespace k3
