// The text-model configuration, read strictly from config.json.
//
// Every size the engine uses comes from here; nothing assumes the tiny
// fixture's or the real K3's dimensions. The reader refuses any key value the
// engine does not implement (see SPEC "Config contract: refuse to guess"),
// naming the key and the value it found.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace k3 {

enum class LayerAttention : uint8_t { kKDA, kMLA };

struct ModelConfig {
  // Core geometry.
  int vocab_size = 0;
  int hidden_size = 0;
  int intermediate_size = 0;  // dense layers' MLP width
  int num_hidden_layers = 0;
  float rms_norm_eps = 0;
  int attn_res_block_size = 0;
  // The positions the model was trained for (max_position_embeddings); 0
  // when config.json does not say. Runs spanning more are refused
  // (check_position_limit): the output past it is unvalidated.
  int64_t max_position_embeddings = 0;
  int bos_token_id = -1;
  std::vector<int> eos_token_ids;  // stop ids: config, generation_config.json, tokenizer eos_token

  // SiTU activation.
  float situ_beta = 0;
  bool has_situ_linear_beta = false;
  float situ_linear_beta = 0;

  // Per layer: attention kind (from the 1-indexed kda_layers/full_attn_layers).
  std::vector<LayerAttention> layer_attention;
  int first_k_dense_replace = 0;  // layers [0, first_k_dense_replace) are dense MLP
  bool is_moe_layer(int i) const { return i >= first_k_dense_replace; }
  bool is_kda_layer(int i) const { return layer_attention[i] == LayerAttention::kKDA; }

  // KDA (linear_attn_config).
  int kda_num_heads = 0;
  int kda_head_dim = 0;
  int kda_conv_kernel = 0;  // short_conv_kernel_size
  bool kda_has_gate_lower_bound = false;
  float kda_gate_lower_bound = 0;  // when absent: softplus gate form

  // MLA.
  int mla_num_heads = 0;
  int q_lora_rank = 0;
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  bool mla_use_output_gate = true;

  // MoE.
  int num_experts = 0;
  int num_experts_per_token = 0;
  int num_shared_experts = 0;
  int moe_intermediate_size = 0;
  int routed_expert_hidden_size = 0;  // the latent width the experts live in
  bool latent_moe_use_norm = true;
  bool moe_renormalize = true;
  float routed_scaling_factor = 1.0f;
  bool experts_mxfp4 = true;  // false: BF16 experts named experts.{e}.{w1,w3,w2}.weight

  // Tensor name prefixes.
  std::string model_prefix = "language_model.model.";
  std::string lm_head_name = "language_model.lm_head.weight";

  // Fingerprint of the config text (xxh3-64 of the file bytes), for trunk and
  // state files to check they belong to this model.
  uint64_t config_hash = 0;

  int num_kda_layers() const;
  int num_mla_layers() const;
};

// Reads MODEL_DIR/config.json (wrapper or bare text config) and, when present,
// MODEL_DIR/generation_config.json for stop ids, to which the eos_token of
// MODEL_DIR/tokenizer_config.json is added. Throws k3::Error(kBadModel)
// naming the file, the key, and the value found.
ModelConfig load_model_config(const std::string& model_dir);

// Throws k3::Error(kUsage) when a run spanning `positions` positions goes
// beyond config.max_position_embeddings, naming both and `what` decided the
// span (e.g. "--ctx, or the prompt plus --gen").
void check_position_limit(const ModelConfig& config, uint64_t positions, const std::string& what);

// Parses config text directly (tests). `generation_config` may be empty.
ModelConfig parse_model_config(const std::string& config_json, const std::string& generation_config_json,
                               const std::string& origin);

}  // namespace k3
