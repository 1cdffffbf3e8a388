#include "synth/synth_geometry.h"

#include "common/error.h"

namespace k3 {

std::vector<std::string> synth_preset_names() { return {"tiny-like", "bench", "k3"}; }

bool synth_preset(const std::string& name, SynthGeometry* out) {
  SynthGeometry g;
  g.name = name;
  if (name == "tiny-like") {
    // Defaults are the tiny fixture's shape.
  } else if (name == "bench") {
    // K3's graph (dense layer 0, 3:1 KDA/MLA, AttnRes blocks of 12, LatentMoE
    // with 2 shared experts and top-16 routing) at about 1/4.7 of its width
    // and 36 layers: ~1.8 GB of trunk and ~7 GB of routed experts, so the
    // experts dominate the file as in K3 while a full streaming pass fits a
    // benchmark run.
    g.vocab_size = 32768;
    g.hidden_size = 1536;
    g.intermediate_size = 7168;
    g.num_hidden_layers = 36;
    g.attn_res_block_size = 12;
    g.kda_num_heads = 12;
    g.kda_head_dim = 128;
    g.mla_num_heads = 12;
    g.q_lora_rank = 384;
    g.kv_lora_rank = 128;
    g.qk_nope_head_dim = 128;
    g.qk_rope_head_dim = 64;
    g.v_head_dim = 128;
    g.num_experts = 256;
    g.num_experts_per_token = 16;
    g.num_shared_experts = 2;
    g.moe_intermediate_size = 640;
    g.routed_expert_hidden_size = 768;
    g.num_shards = 8;
  } else if (name == "k3") {
    static_cast<ModelGeometry&>(g) = k3_geometry();
    // SPEC section 1: 96 files of about 16 GB, the vision tower in the
    // trailing one, 1,560,936,091,448 bytes in all.
    g.num_shards = kK3ShardFiles;
    g.vision_shard = false;
    g.total_shard_bytes = kK3CheckpointBytes;
  } else {
    return false;
  }
  g.full_attn_layers = ModelGeometry::k3_full_attn_layers(g.num_hidden_layers);
  *out = g;
  return true;
}

void validate_geometry(const SynthGeometry& g) {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw Error(ExitCode::kUsage, "invalid geometry: " + what);
  };
  need(g.vocab_size > 256 + 256, "vocab_size must exceed 512 (256 byte tokens + 256 specials)");
  need(g.hidden_size > 0 && g.intermediate_size > 0 && g.num_hidden_layers > 0, "sizes must be positive");
  need(g.first_k_dense_replace >= 0 && g.first_k_dense_replace <= g.num_hidden_layers,
       "first_k_dense_replace must be within 0..num_hidden_layers");
  need(g.attn_res_block_size > 0, "attn_res_block_size must be positive");
  need(g.kda_num_heads > 0 && g.kda_head_dim >= g.kda_num_heads,
       "kda head_dim must be >= num_heads (A_log is stored zero-padded to head_dim)");
  need(g.conv_kernel > 0, "conv kernel must be positive");
  need(g.mla_num_heads > 0 && g.q_lora_rank > 0 && g.kv_lora_rank > 0 && g.qk_nope_head_dim > 0 &&
           g.qk_rope_head_dim > 0 && g.v_head_dim > 0,
       "MLA sizes must be positive");
  need(g.num_experts > 0 && g.num_experts_per_token > 0 && g.num_experts_per_token <= g.num_experts,
       "num_experts_per_token must be within 1..num_experts");
  need(g.num_shared_experts > 0, "num_shared_experts must be positive");
  need(g.moe_intermediate_size > 0 && g.moe_intermediate_size % 32 == 0,
       "moe_intermediate_size must be a positive multiple of 32");
  need(g.routed_expert_hidden_size > 0 && g.routed_expert_hidden_size % 32 == 0,
       "routed_expert_hidden_size must be a positive multiple of 32");
  need(g.num_shards > 0, "num_shards must be positive");
  for (int l : g.full_attn_layers)
    need(l >= 1 && l <= g.num_hidden_layers, "full_attn_layers entries must be within 1..num_hidden_layers");
}

std::string synth_config_json(const SynthGeometry& g) { return geometry_config_json(g); }
std::string synth_generation_config_json(const SynthGeometry& g) { return geometry_generation_config_json(g); }

}  // namespace k3
