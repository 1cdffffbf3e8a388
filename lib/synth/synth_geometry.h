// The shape of a synthetic checkpoint: every size the generator writes into
// config.json and uses to lay out tensors. Named presets cover the tiny
// fixture's shape, a multi-GB benchmark shape with K3's graph scaled down,
// and K3's real geometry.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace k3 {

struct SynthGeometry {
  std::string name = "custom";
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
  // Files.
  int num_shards = 4;  // weight shards (plus one vision shard when vision_shard)
  // true: the vision tensors sit in a trailing shard of their own (the tiny
  // fixture's layout); false: they share the last of num_shards shards, and
  // the cuts are placed so that every shard holds about the same bytes (K3's
  // 96 files).
  bool vision_shard = true;
  // When non-zero, one vision tensor is sized so that the shard files add up
  // to exactly this many bytes (K3: 1,560,936,091,448 over 96 files).
  uint64_t total_shard_bytes = 0;

  // K3's arrangement: MLA at every 4th layer (1-indexed) and at the last.
  // For 93 layers: 4, 8, ..., 92 and 93 (24 MLA), the other 69 KDA.
  static std::vector<int> k3_full_attn_layers(int num_layers);
  bool is_mla(int layer0) const;  // 0-based layer index
  int kda_count() const;
  int mla_count() const;
};

// "tiny-like", "bench", "k3". Returns false for an unknown name.
bool synth_preset(const std::string& name, SynthGeometry* out);
std::vector<std::string> synth_preset_names();

// Throws k3::Error(kUsage) naming the first field that cannot form a valid
// checkpoint (non-positive size, latent/moe_inter not multiples of 32, top-k
// larger than the expert count, vocab not above 256 specials, ...).
void validate_geometry(const SynthGeometry& g);

// config.json (wrapper with text_config and a top-level
// quantization_config), generation_config.json.
std::string synth_config_json(const SynthGeometry& g);
std::string synth_generation_config_json(const SynthGeometry& g);

}  // namespace k3
