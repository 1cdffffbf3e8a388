#include "synth/synth_geometry.h"

#include <algorithm>
#include <sstream>

#include "common/error.h"

namespace k3 {

std::vector<int> SynthGeometry::k3_full_attn_layers(int num_layers) {
  std::vector<int> out;
  for (int l = 4; l <= num_layers; l += 4) out.push_back(l);
  if (out.empty() || out.back() != num_layers) out.push_back(num_layers);
  return out;
}

bool SynthGeometry::is_mla(int layer0) const {
  return std::find(full_attn_layers.begin(), full_attn_layers.end(), layer0 + 1) != full_attn_layers.end();
}

int SynthGeometry::mla_count() const {
  int n = 0;
  for (int i = 0; i < num_hidden_layers; ++i) n += is_mla(i);
  return n;
}

int SynthGeometry::kda_count() const { return num_hidden_layers - mla_count(); }

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
    g.vocab_size = 163840;
    g.hidden_size = 7168;
    g.intermediate_size = 33792;
    g.num_hidden_layers = 93;
    g.attn_res_block_size = 12;
    g.kda_num_heads = 96;
    g.kda_head_dim = 128;
    g.mla_num_heads = 96;
    g.q_lora_rank = 1536;
    g.kv_lora_rank = 512;
    g.qk_nope_head_dim = 128;
    g.qk_rope_head_dim = 64;
    g.v_head_dim = 128;
    g.num_experts = 896;
    g.num_experts_per_token = 16;
    g.num_shared_experts = 2;
    g.moe_intermediate_size = 3072;
    g.routed_expert_hidden_size = 3584;
    // SPEC section 1: 96 files of about 16 GB, the vision tower in the
    // trailing one, 1,560,936,091,448 bytes in all.
    g.num_shards = 96;
    g.vision_shard = false;
    g.total_shard_bytes = 1560936091448ull;
  } else {
    return false;
  }
  g.full_attn_layers = SynthGeometry::k3_full_attn_layers(g.num_hidden_layers);
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

namespace {
std::string int_list(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}
}  // namespace

std::string synth_config_json(const SynthGeometry& g) {
  const int specials = g.vocab_size - 256;
  const int bos = specials, eos = specials + 1, pad = g.vocab_size - 1;
  std::vector<int> kda, full;
  for (int i = 0; i < g.num_hidden_layers; ++i) (g.is_mla(i) ? full : kda).push_back(i + 1);
  std::ostringstream o;
  o << "{\n"
    << "  \"architectures\": [\"KimiK3ForConditionalGeneration\"],\n"
    << "  \"model_type\": \"kimi_k3\",\n"
    << "  \"text_config\": {\n"
    << "    \"model_type\": \"kimi_linear\",\n"
    << "    \"architectures\": [\"KimiLinearForCausalLM\"],\n"
    << "    \"vocab_size\": " << g.vocab_size << ",\n"
    << "    \"hidden_size\": " << g.hidden_size << ",\n"
    << "    \"intermediate_size\": " << g.intermediate_size << ",\n"
    << "    \"num_hidden_layers\": " << g.num_hidden_layers << ",\n"
    << "    \"num_attention_heads\": " << g.mla_num_heads << ",\n"
    << "    \"num_key_value_heads\": " << g.mla_num_heads << ",\n"
    << "    \"hidden_act\": \"situ\",\n"
    << "    \"activation_situ_beta\": 4.0,\n"
    << "    \"activation_situ_linear_beta\": 25.0,\n"
    << "    \"initializer_range\": 0.02,\n"
    << "    \"rms_norm_eps\": 1e-05,\n"
    << "    \"use_cache\": true,\n"
    << "    \"max_position_embeddings\": 1048576,\n"
    << "    \"tie_word_embeddings\": false,\n"
    << "    \"bos_token_id\": " << bos << ",\n"
    << "    \"eos_token_id\": " << eos << ",\n"
    << "    \"pad_token_id\": " << pad << ",\n"
    << "    \"attn_res_block_size\": " << g.attn_res_block_size << ",\n"
    << "    \"q_lora_rank\": " << g.q_lora_rank << ",\n"
    << "    \"kv_lora_rank\": " << g.kv_lora_rank << ",\n"
    << "    \"qk_nope_head_dim\": " << g.qk_nope_head_dim << ",\n"
    << "    \"qk_rope_head_dim\": " << g.qk_rope_head_dim << ",\n"
    << "    \"v_head_dim\": " << g.v_head_dim << ",\n"
    << "    \"mla_use_nope\": true,\n"
    << "    \"mla_use_output_gate\": true,\n"
    << "    \"num_experts\": " << g.num_experts << ",\n"
    << "    \"num_experts_per_token\": " << g.num_experts_per_token << ",\n"
    << "    \"num_shared_experts\": " << g.num_shared_experts << ",\n"
    << "    \"moe_intermediate_size\": " << g.moe_intermediate_size << ",\n"
    << "    \"routed_expert_hidden_size\": " << g.routed_expert_hidden_size << ",\n"
    << "    \"latent_moe_use_norm\": true,\n"
    << "    \"first_k_dense_replace\": " << g.first_k_dense_replace << ",\n"
    << "    \"moe_layer_freq\": 1,\n"
    << "    \"moe_renormalize\": true,\n"
    << "    \"moe_router_activation_func\": \"sigmoid\",\n"
    << "    \"routed_scaling_factor\": 1.0,\n"
    << "    \"num_expert_group\": 1,\n"
    << "    \"topk_group\": 1,\n"
    << "    \"topk_method\": \"noaux_tc\",\n"
    << "    \"num_nextn_predict_layers\": 0,\n"
    << "    \"linear_attn_config\": {\n"
    << "      \"num_heads\": " << g.kda_num_heads << ",\n"
    << "      \"head_dim\": " << g.kda_head_dim << ",\n"
    << "      \"short_conv_kernel_size\": " << g.conv_kernel << ",\n"
    << "      \"gate_lower_bound\": -5.0,\n"
    << "      \"use_full_rank_gate\": true,\n"
    << "      \"kda_layers\": " << int_list(kda) << ",\n"
    << "      \"full_attn_layers\": " << int_list(full) << "\n"
    << "    },\n"
    << "    \"dtype\": \"bfloat16\"\n"
    << "  },\n"
    << "  \"quantization_config\": {\n"
    << "    \"quant_method\": \"compressed-tensors\",\n"
    << "    \"format\": \"mxfp4-pack-quantized\",\n"
    << "    \"quantization_status\": \"compressed\",\n"
    << "    \"config_groups\": {\n"
    << "      \"group_0\": {\n"
    << "        \"format\": \"mxfp4-pack-quantized\",\n"
    << "        \"targets\": [\"Linear\"],\n"
    << "        \"weights\": {\n"
    << "          \"num_bits\": 4, \"type\": \"float\", \"symmetric\": true, \"strategy\": \"group\",\n"
    << "          \"group_size\": 32, \"dynamic\": false, \"scale_dtype\": \"torch.uint8\",\n"
    << "          \"observer\": \"minmax\", \"observer_kwargs\": {}, \"actorder\": null,\n"
    << "          \"block_structure\": null, \"zp_dtype\": null\n"
    << "        },\n"
    << "        \"input_activations\": null,\n"
    << "        \"output_activations\": null\n"
    << "      }\n"
    << "    },\n"
    << "    \"ignore\": [\"re:.*self_attn.*\", \"re:.*shared_experts.*\", "
       "\"re:.*mlp\\\\.(gate|up|gate_up|down)_proj.*\", \"re:.*lm_head.*\", \"re:.*vision_tower.*\", "
       "\"re:.*mm_projector.*\", \"re:.*block_sparse_moe\\\\.gate$\", "
       "\"re:.*routed_expert_(down|up)_proj$\", \"re:.*_res_proj$\"],\n"
    << "    \"kv_cache_scheme\": null,\n"
    << "    \"global_compression_ratio\": null,\n"
    << "    \"sparsity_config\": {},\n"
    << "    \"transform_config\": {}\n"
    << "  },\n"
    << "  \"bos_token_id\": " << bos << ",\n"
    << "  \"eos_token_id\": " << eos << ",\n"
    << "  \"pad_token_id\": " << pad << ",\n"
    << "  \"tie_word_embeddings\": false,\n"
    << "  \"dtype\": \"bfloat16\",\n"
    << "  \"transformers_version\": \"4.56.0\"\n"
    << "}\n";
  return o.str();
}

std::string synth_generation_config_json(const SynthGeometry& g) {
  const int specials = g.vocab_size - 256;
  std::ostringstream o;
  o << "{\n  \"_from_model_config\": true,\n  \"bos_token_id\": " << specials
    << ",\n  \"eos_token_id\": " << specials + 1 << ",\n  \"pad_token_id\": " << g.vocab_size - 1
    << ",\n  \"transformers_version\": \"4.56.0\"\n}\n";
  return o.str();
}

}  // namespace k3
