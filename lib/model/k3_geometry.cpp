#include "model/k3_geometry.h"

#include <algorithm>
#include <sstream>

namespace k3 {

std::vector<int> ModelGeometry::k3_full_attn_layers(int num_layers) {
  std::vector<int> out;
  for (int l = 4; l <= num_layers; l += 4) out.push_back(l);
  if (out.empty() || out.back() != num_layers) out.push_back(num_layers);
  return out;
}

bool ModelGeometry::is_mla(int layer0) const {
  return std::find(full_attn_layers.begin(), full_attn_layers.end(), layer0 + 1) != full_attn_layers.end();
}

int ModelGeometry::mla_count() const {
  int n = 0;
  for (int i = 0; i < num_hidden_layers; ++i) n += is_mla(i);
  return n;
}

int ModelGeometry::kda_count() const { return num_hidden_layers - mla_count(); }

ModelGeometry k3_geometry() {
  // SPEC section 1.
  ModelGeometry g;
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
  g.full_attn_layers = ModelGeometry::k3_full_attn_layers(g.num_hidden_layers);
  return g;
}

ModelConfig k3_reference_config() {
  // Read the way k3-forward reads a real config.json, so every derived field
  // is the one k3-forward would plan with.
  const ModelGeometry g = k3_geometry();
  return parse_model_config(geometry_config_json(g), geometry_generation_config_json(g), "Kimi-K3 reference geometry");
}

namespace {
std::string int_list(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}
}  // namespace

std::string geometry_config_json(const ModelGeometry& g) {
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

std::string geometry_generation_config_json(const ModelGeometry& g) {
  const int specials = g.vocab_size - 256;
  std::ostringstream o;
  o << "{\n  \"_from_model_config\": true,\n  \"bos_token_id\": " << specials
    << ",\n  \"eos_token_id\": " << specials + 1 << ",\n  \"pad_token_id\": " << g.vocab_size - 1
    << ",\n  \"transformers_version\": \"4.56.0\"\n}\n";
  return o.str();
}

}  // namespace k3
