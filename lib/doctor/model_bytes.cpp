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

ModelConfig k3_reference_config() {
  ModelConfig c;
  c.vocab_size = 163840;
  c.hidden_size = 7168;
  c.intermediate_size = 33792;
  c.num_hidden_layers = 93;
  c.attn_res_block_size = 12;  // sizes the AttnRes activations in the memory plan
  c.first_k_dense_replace = 1;
  // 1-indexed full-attention layers every 4th and the last: 24 MLA, 69 KDA.
  for (int i = 0; i < c.num_hidden_layers; ++i) {
    const int n = i + 1;
    c.layer_attention.push_back(n % 4 == 0 || n == c.num_hidden_layers ? LayerAttention::kMLA
                                                                       : LayerAttention::kKDA);
  }
  c.kda_num_heads = 96;
  c.kda_head_dim = 128;
  c.kda_conv_kernel = 4;
  c.mla_num_heads = 96;
  c.q_lora_rank = 1536;
  c.kv_lora_rank = 512;
  c.qk_nope_head_dim = 128;
  c.qk_rope_head_dim = 64;
  c.v_head_dim = 128;
  c.num_experts = 896;
  c.num_experts_per_token = 16;
  c.num_shared_experts = 2;
  c.moe_intermediate_size = 3072;
  c.routed_expert_hidden_size = 3584;
  c.experts_mxfp4 = true;
  return c;
}

}  // namespace k3::doctor
