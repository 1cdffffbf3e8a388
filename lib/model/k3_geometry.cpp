#include "model/k3_geometry.h"

#include <algorithm>

#include "common/json_writer.h"

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

// The config.json keys of the text model (as Kimi-K3's own config.json
// writes them), inside "text_config".
void write_text_config(JsonWriter& w, const ModelGeometry& g, int bos, int eos, int pad) {
  std::vector<int> kda, full;
  for (int i = 0; i < g.num_hidden_layers; ++i) (g.is_mla(i) ? full : kda).push_back(i + 1);
  w.begin_object();
  w.key("model_type").value("kimi_linear");
  w.key("architectures").inline_next().begin_array().value("KimiLinearForCausalLM").end_array();
  w.key("vocab_size").value(g.vocab_size);
  w.key("hidden_size").value(g.hidden_size);
  w.key("intermediate_size").value(g.intermediate_size);
  w.key("num_hidden_layers").value(g.num_hidden_layers);
  w.key("num_attention_heads").value(g.mla_num_heads);
  w.key("num_key_value_heads").value(g.mla_num_heads);
  w.key("hidden_act").value("situ");
  w.key("activation_situ_beta").fixed(4.0, 1);
  w.key("activation_situ_linear_beta").fixed(25.0, 1);
  w.key("initializer_range").value(0.02);
  w.key("rms_norm_eps").value(1e-05);
  w.key("use_cache").value(true);
  w.key("max_position_embeddings").value(1048576);
  w.key("tie_word_embeddings").value(false);
  w.key("bos_token_id").value(bos);
  w.key("eos_token_id").value(eos);
  w.key("pad_token_id").value(pad);
  w.key("attn_res_block_size").value(g.attn_res_block_size);
  w.key("q_lora_rank").value(g.q_lora_rank);
  w.key("kv_lora_rank").value(g.kv_lora_rank);
  w.key("qk_nope_head_dim").value(g.qk_nope_head_dim);
  w.key("qk_rope_head_dim").value(g.qk_rope_head_dim);
  w.key("v_head_dim").value(g.v_head_dim);
  w.key("mla_use_nope").value(true);
  w.key("mla_use_output_gate").value(true);
  w.key("num_experts").value(g.num_experts);
  w.key("num_experts_per_token").value(g.num_experts_per_token);
  w.key("num_shared_experts").value(g.num_shared_experts);
  w.key("moe_intermediate_size").value(g.moe_intermediate_size);
  w.key("routed_expert_hidden_size").value(g.routed_expert_hidden_size);
  w.key("latent_moe_use_norm").value(true);
  w.key("first_k_dense_replace").value(g.first_k_dense_replace);
  w.key("moe_layer_freq").value(1);
  w.key("moe_renormalize").value(true);
  w.key("moe_router_activation_func").value("sigmoid");
  w.key("routed_scaling_factor").fixed(1.0, 1);
  w.key("num_expert_group").value(1);
  w.key("topk_group").value(1);
  w.key("topk_method").value("noaux_tc");
  w.key("num_nextn_predict_layers").value(0);
  w.key("linear_attn_config").begin_object();
  w.key("num_heads").value(g.kda_num_heads);
  w.key("head_dim").value(g.kda_head_dim);
  w.key("short_conv_kernel_size").value(g.conv_kernel);
  w.key("gate_lower_bound").fixed(-5.0, 1);
  w.key("use_full_rank_gate").value(true);
  w.key("kda_layers").inline_next().begin_array();
  for (int l : kda) w.value(l);
  w.end_array();
  w.key("full_attn_layers").inline_next().begin_array();
  for (int l : full) w.value(l);
  w.end_array();
  w.end_object();
  w.key("dtype").value("bfloat16");
  w.end_object();
}

// compressed-tensors' description of the MXFP4 routed experts: which
// matrices are quantized ("ignore" lists the ones kept in BF16) and how.
void write_quantization_config(JsonWriter& w) {
  w.begin_object();
  w.key("quant_method").value("compressed-tensors");
  w.key("format").value("mxfp4-pack-quantized");
  w.key("quantization_status").value("compressed");
  w.key("config_groups").begin_object();
  w.key("group_0").begin_object();
  w.key("format").value("mxfp4-pack-quantized");
  w.key("targets").inline_next().begin_array().value("Linear").end_array();
  w.key("weights").begin_object();
  w.key("num_bits").value(4);
  w.key("type").value("float");
  w.key("symmetric").value(true);
  w.key("strategy").value("group");
  w.key("group_size").value(32);
  w.key("dynamic").value(false);
  w.key("scale_dtype").value("torch.uint8");
  w.key("observer").value("minmax");
  w.key("observer_kwargs").begin_object().end_object();
  w.key("actorder").null();
  w.key("block_structure").null();
  w.key("zp_dtype").null();
  w.end_object();
  w.key("input_activations").null();
  w.key("output_activations").null();
  w.end_object();
  w.end_object();
  w.key("ignore").inline_next().begin_array();
  for (const char* pattern : {"re:.*self_attn.*", "re:.*shared_experts.*", "re:.*mlp\\.(gate|up|gate_up|down)_proj.*",
                              "re:.*lm_head.*", "re:.*vision_tower.*", "re:.*mm_projector.*",
                              "re:.*block_sparse_moe\\.gate$", "re:.*routed_expert_(down|up)_proj$", "re:.*_res_proj$"})
    w.value(pattern);
  w.end_array();
  w.key("kv_cache_scheme").null();
  w.key("global_compression_ratio").null();
  w.key("sparsity_config").begin_object().end_object();
  w.key("transform_config").begin_object().end_object();
  w.end_object();
}

}  // namespace

std::string geometry_config_json(const ModelGeometry& g) {
  const int specials = g.vocab_size - 256;
  const int bos = specials, eos = specials + 1, pad = g.vocab_size - 1;
  JsonWriter w(2);
  w.begin_object();
  w.key("architectures").inline_next().begin_array().value("KimiK3ForConditionalGeneration").end_array();
  w.key("model_type").value("kimi_k3");
  w.key("text_config");
  write_text_config(w, g, bos, eos, pad);
  w.key("quantization_config");
  write_quantization_config(w);
  w.key("bos_token_id").value(bos);
  w.key("eos_token_id").value(eos);
  w.key("pad_token_id").value(pad);
  w.key("tie_word_embeddings").value(false);
  w.key("dtype").value("bfloat16");
  w.key("transformers_version").value("4.56.0");
  w.end_object();
  return w.take() + "\n";
}

std::string geometry_generation_config_json(const ModelGeometry& g) {
  const int specials = g.vocab_size - 256;
  JsonWriter w(2);
  w.begin_object();
  w.key("_from_model_config").value(true);
  w.key("bos_token_id").value(specials);
  w.key("eos_token_id").value(specials + 1);
  w.key("pad_token_id").value(g.vocab_size - 1);
  w.key("transformers_version").value("4.56.0");
  w.end_object();
  return w.take() + "\n";
}

}  // namespace k3
