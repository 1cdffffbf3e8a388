#include "doctor/model_bytes.h"

#include <algorithm>
#include <vector>

#include "model/tensor_manifest.h"

namespace k3::doctor {

ModelBytes model_bytes_from_config(const ModelConfig& c) {
  // Summed over the engine's own manifest, so these sizes are the tensors
  // k3-forward and k3-pack read, nothing assumed here.
  ModelBytes b;
  std::vector<uint64_t> layer(static_cast<size_t>(std::max(c.num_hidden_layers, 0)), 0);
  int first_moe = -1;
  for (const ExpectedTensor& t : expected_tensors(c)) {
    uint64_t n = dtype_size(t.dtype);
    for (uint64_t d : t.shape) n *= d;
    switch (t.group) {
      case TensorGroup::kEmbedding: b.embedding += n; break;
      case TensorGroup::kHead: b.head += n; break;
      case TensorGroup::kLayerTrunk: layer[t.layer] += n; break;
      case TensorGroup::kRoutedExpert:
        if (first_moe < 0) first_moe = t.layer;
        if (t.layer == first_moe && t.expert == 0) b.one_expert += n;
        break;
    }
  }
  for (int i = 0; i < c.num_hidden_layers; ++i) {
    b.layers_trunk += layer[i];
    if (c.is_moe_layer(i)) {
      ++b.moe_layers;
      b.largest_moe_layer_trunk = std::max(b.largest_moe_layer_trunk, layer[i]);
    }
  }
  b.num_experts = c.num_experts;
  b.experts_per_token = c.num_experts_per_token;
  return b;
}

}  // namespace k3::doctor
