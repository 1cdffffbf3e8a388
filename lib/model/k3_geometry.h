// K3's reference geometry: the sizes a Kimi-K3-family config.json carries,
// the real model's own (SPEC section 1) among them, and that config written
// out as config.json text. The test-checkpoint generator builds on it
// (synth/synth_geometry.h); k3-doctor forecasts the real model with it
// before the checkpoint is downloaded.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"

namespace k3 {

struct ModelGeometry {
  int vocab_size = 8448;  // ordinary tokens + 256 specials
  int hidden_size = 64;
  int intermediate_size = 160;  // dense layers
  int num_hidden_layers = 13;
  int first_k_dense_replace = 1;
  int attn_res_block_size = 4;
  // 1-indexed layer numbers of the MLA (full attention) layers; the rest are KDA.
  std::vector<int> full_attn_layers;
  // KDA.
  int kda_num_heads = 6;
  int kda_head_dim = 16;
  int conv_kernel = 4;
  // MLA.
  int mla_num_heads = 6;
  int q_lora_rank = 48;
  int kv_lora_rank = 32;
  int qk_nope_head_dim = 16;
  int qk_rope_head_dim = 8;
  int v_head_dim = 16;
  // MoE.
  int num_experts = 16;
  int num_experts_per_token = 4;
  int num_shared_experts = 2;
  int moe_intermediate_size = 64;
  int routed_expert_hidden_size = 32;

  // K3's arrangement: MLA at every 4th layer (1-indexed) and at the last.
  // For 93 layers: 4, 8, ..., 92 and 93 (24 MLA), the other 69 KDA.
  static std::vector<int> k3_full_attn_layers(int num_layers);
  bool is_mla(int layer0) const;  // 0-based layer index
  int kda_count() const;
  int mla_count() const;
};

// The real Kimi-K3 text model (SPEC section 1).
ModelGeometry k3_geometry();
// k3_geometry() read as k3-forward reads a config.json, for forecasts made
// before the checkpoint is downloaded.
ModelConfig k3_reference_config();

// The real checkpoint's files (SPEC section 1): 96 shards, this many bytes.
inline constexpr int kK3ShardFiles = 96;
inline constexpr uint64_t kK3CheckpointBytes = 1'560'936'091'448ULL;

// config.json (wrapper with text_config and a top-level
// quantization_config) and generation_config.json for a geometry.
std::string geometry_config_json(const ModelGeometry& g);
std::string geometry_generation_config_json(const ModelGeometry& g);

}  // namespace k3
