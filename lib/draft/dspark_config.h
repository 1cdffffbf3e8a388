// Layer draft: K3's trained draft model (DSpark): checkpoint, context fusion, the 7-row draft pass, heads, and the
// draft source that feeds speculation.
//
// The DSpark draft configuration (config.json of a Kimi-K3-DSpark checkpoint,
// docs/dspark.md). Every size the draft uses comes from here; values the
// draft pass does not implement (NoPE, output gate, another rope type or
// Markov head kind) are refused by name, never assumed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace k3 {

struct ModelConfig;

struct DSparkConfig {
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_hidden_layers = 0;
  int num_heads = 0;
  int q_lora_rank = 0;
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  int vocab_size = 0;
  float rms_norm_eps = 0;  // every draft norm uses it (input, post, final, context, q_a, kv_a)
  // YaRN (rope_parameters).
  double rope_theta = 0;
  double rope_factor = 1;
  int64_t rope_original_max_positions = 0;
  double beta_fast = 32, beta_slow = 1, mscale = 1, mscale_all_dim = 0;
  // The target: the decoder layers whose outputs are tapped, in fusion order.
  std::vector<int> target_layer_ids;
  int target_hidden_size = 0;
  int target_num_hidden_layers = 0;
  int mask_token_id = 0;
  int markov_rank = 0;
  bool confidence_head = false;  // enable_confidence_head (with the Markov embedding in its input)
  // Query rows per draft pass: "block_size" when the config has it, else the
  // 7 rows Kimi-K3-DSpark was trained with.
  int block_size = 7;
  uint64_t config_hash = 0;  // xxh3-64 of config.json's bytes

  int num_taps() const { return static_cast<int>(target_layer_ids.size()); }
  int qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
  int kv_stride() const { return kv_lora_rank + qk_rope_head_dim; }  // floats per cached position per layer
};

// Reads DIR/config.json. Throws Error(kBadModel) naming the key.
DSparkConfig load_dspark_config(const std::string& dir);
// The same from the text of a config.json (`origin` names it in errors).
DSparkConfig parse_dspark_config(const std::string& text, const std::string& origin);
// Inferact/Kimi-K3-DSpark's geometry (for plans and benches at true size).
DSparkConfig kimi_k3_dspark_geometry();
// The config.json text that geometry is read from (k3-synth --dspark writes it).
const char* kimi_k3_dspark_config_json();

// The key messages name the draft model's directory by
// (common/setting_spelling.h; the tools: --draft).
inline constexpr const char* kDraftDirSetting = "draft_dir";

// Refuses (Error kBadModel, one line naming both values) a draft whose target
// layers, hidden size or vocabulary do not fit `target`.
void check_draft_fits(const DSparkConfig& draft, const ModelConfig& target, const std::string& dir);

}  // namespace k3
