#include "doctor/model_bytes.h"

#include <algorithm>

namespace k3::doctor {

namespace {
constexpr uint64_t kBF16 = 2, kF32 = 4;
}  // namespace

ModelBytes model_bytes_from_config(const ModelConfig& c) {
  // Kept as plain arithmetic over SPEC's tensor list; it must agree with
  // model/tensor_manifest's expected_tensors, which the tests check where
  // both exist.
  const uint64_t hidden = c.hidden_size, vocab = c.vocab_size;
  ModelBytes b;
  b.embedding = vocab * hidden * kBF16;
  b.head = hidden * kF32 + hidden * kBF16 + hidden * kF32 + vocab * hidden * kBF16;

  const uint64_t H = c.kda_num_heads, D = c.kda_head_dim, HD = H * D, K = c.kda_conv_kernel;
  const uint64_t kda = 3 * HD * hidden * kBF16    // q, k, v
                       + 3 * HD * K * kBF16       // depthwise convs
                       + D * hidden * kBF16       // f_a
                       + HD * D * kBF16           // f_b
                       + H * hidden * kBF16       // b_proj
                       + HD * hidden * kBF16      // g_proj
                       + hidden * HD * kBF16      // o_proj
                       + D * kF32 + D * kF32 + HD * kF32;  // o_norm, A_log (padded to D), dt_bias

  const uint64_t heads = c.mla_num_heads, qh = c.qk_nope_head_dim + c.qk_rope_head_dim;
  const uint64_t mla = uint64_t(c.q_lora_rank) * hidden * kBF16 + uint64_t(c.q_lora_rank) * kF32 +
                       heads * qh * c.q_lora_rank * kBF16 +
                       uint64_t(c.kv_lora_rank + c.qk_rope_head_dim) * hidden * kBF16 +
                       uint64_t(c.kv_lora_rank) * kF32 +
                       heads * (c.qk_nope_head_dim + c.v_head_dim) * c.kv_lora_rank * kBF16 +
                       heads * c.v_head_dim * hidden * kBF16 * 2;  // g_proj, o_proj

  const uint64_t common = 2 * hidden * kF32 + 2 * hidden * kBF16 + 2 * hidden * kF32;
  const uint64_t dense = 3 * uint64_t(c.intermediate_size) * hidden * kBF16;
  const uint64_t E = c.num_experts, latent = c.routed_expert_hidden_size, inter = c.moe_intermediate_size;
  const uint64_t moe = E * hidden * kBF16 + E * kF32                     // router
                       + 2 * latent * hidden * kBF16 + latent * kF32     // LatentMoE projections + norm
                       + 3 * inter * c.num_shared_experts * hidden * kBF16;  // shared experts
  b.one_expert = c.experts_mxfp4 ? 3 * (inter * latent / 2 + inter * latent / 32)
                                 : 3 * inter * latent * kBF16;

  for (int i = 0; i < c.num_hidden_layers; ++i) {
    const bool kda_layer = i < static_cast<int>(c.layer_attention.size()) && c.is_kda_layer(i);
    uint64_t layer = common + (kda_layer ? kda : mla) + (c.is_moe_layer(i) ? moe : dense);
    b.layers_trunk += layer;
    if (c.is_moe_layer(i)) {
      ++b.moe_layers;
      b.largest_moe_layer_trunk = std::max(b.largest_moe_layer_trunk, layer);
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
