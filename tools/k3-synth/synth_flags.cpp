#include "synth_flags.h"

#include <string>

namespace k3 {

const std::array<SynthSizeFlags::Flag, 16> SynthSizeFlags::kFlags{{
    {"--vocab", "vocab_size (ordinary tokens + 256 specials)", &SynthGeometry::vocab_size},
    {"--hidden", "hidden_size", &SynthGeometry::hidden_size},
    {"--intermediate", "intermediate_size of the dense layers", &SynthGeometry::intermediate_size},
    {"--layers", "num_hidden_layers (MLA at every 4th and the last, 1-indexed)", &SynthGeometry::num_hidden_layers},
    {"--attn-res-block", "attn_res_block_size", &SynthGeometry::attn_res_block_size},
    {"--experts", "num_experts", &SynthGeometry::num_experts},
    {"--top-k", "num_experts_per_token", &SynthGeometry::num_experts_per_token},
    {"--shared", "num_shared_experts", &SynthGeometry::num_shared_experts},
    {"--moe-inter", "moe_intermediate_size (multiple of 32)", &SynthGeometry::moe_intermediate_size},
    {"--latent", "routed_expert_hidden_size (multiple of 32)", &SynthGeometry::routed_expert_hidden_size},
    {"--kda-heads", "linear_attn_config.num_heads", &SynthGeometry::kda_num_heads},
    {"--kda-head-dim", "linear_attn_config.head_dim", &SynthGeometry::kda_head_dim},
    {"--mla-heads", "num_attention_heads", &SynthGeometry::mla_num_heads},
    {"--q-lora", "q_lora_rank", &SynthGeometry::q_lora_rank},
    {"--kv-lora", "kv_lora_rank", &SynthGeometry::kv_lora_rank},
    {"--shards", "number of weight shards (a vision shard is added)", &SynthGeometry::num_shards},
}};

void SynthSizeFlags::add_to(CLI::App& app) {
  // 0, the value bound before parsing, leaves the preset's size (apply below).
  for (size_t i = 0; i < kFlags.size(); ++i)
    app.add_option(kFlags[i].name, values_[i], std::string(kFlags[i].help) + " (default 0: --preset's)");
}

void SynthSizeFlags::apply(SynthGeometry& g) const {
  bool changed = false;
  for (size_t i = 0; i < kFlags.size(); ++i) {
    if (!values_[i]) continue;
    g.*kFlags[i].field = values_[i];
    changed = true;
    if (kFlags[i].field == &SynthGeometry::num_hidden_layers)
      g.full_attn_layers = SynthGeometry::k3_full_attn_layers(values_[i]);
  }
  if (changed) g.total_shard_bytes = 0;  // the published total only holds for the preset's own geometry
}

}  // namespace k3
