// Strict reader for the Kimi-K3 text config (SPEC "Config contract: refuse to
// guess"). Every key the engine depends on is read and checked here; a key
// that is missing, has the wrong type, or holds a value the engine does not
// implement is an error naming the key and the value found, never a default.
#include "model/config.h"

#include <simdjson.h>
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/error.h"
#include "common/file.h"
#include "model/config_keys.h"
#include "tokenizer/tokenizer_eos.h"

namespace k3 {

namespace {

// A config.json is a few kilobytes; 16 MiB is room for any and refuses a
// link to /dev/zero at once.
constexpr uint64_t kMaxConfigBytes = 16ull << 20;

using simdjson::dom::element;
using simdjson::dom::object;

// eos_token_id may be a number or a list of numbers.
void collect_eos(const ConfigKeys& r, const std::string& key, std::vector<int>* out) {
  if (!r.has(key)) return;
  element e = r.get(key);
  int64_t v;
  if (!e.get_int64().get(v)) {
    out->push_back(static_cast<int>(v));
    return;
  }
  simdjson::dom::array a;
  if (e.get_array().get(a)) r.fail(key, "must be a token id or a list of token ids, found " + json_excerpt(e));
  for (element x : a) {
    if (x.get_int64().get(v)) r.fail(key, "must be a list of token ids, found element " + json_excerpt(x));
    out->push_back(static_cast<int>(v));
  }
}

void check_quantization(const ConfigKeys& q, ModelConfig* c) {
  q.require_string("quant_method", "compressed-tensors", " (routed experts must be MXFP4 compressed-tensors)");
  q.require_string("format", "mxfp4-pack-quantized", "");
  ConfigKeys groups = q.child("config_groups");
  size_t n = 0;
  for (auto field : groups.obj()) {
    ++n;
    ConfigKeys g = groups.child(std::string(field.key));
    if (g.has("format")) g.require_string("format", "mxfp4-pack-quantized", "");
    ConfigKeys w = g.child("weights");
    w.require_int("num_bits", 4, " (MXFP4)");
    w.require_int("group_size", 32, " (MXFP4)");
    w.require_string("type", "float", " (MXFP4 E2M1 codes)");
    w.require_string("strategy", "group", "");
    w.require_bool("symmetric", true, "");
  }
  if (n == 0) q.fail("config_groups", "is empty; expected one MXFP4 group for the routed experts");
  c->experts_mxfp4 = true;
}

// kda_layers and full_attn_layers: 1-indexed lists that partition
// 1..num_hidden_layers into KDA and MLA layers.
void read_layer_kinds(const ConfigKeys& la, ModelConfig* c) {
  const std::vector<int64_t> kda = la.int_list("kda_layers");
  const std::vector<int64_t> full = la.int_list("full_attn_layers");
  const int n = c->num_hidden_layers;
  std::vector<int> seen(n, 0);
  c->layer_attention.assign(n, LayerAttention::kKDA);
  auto mark = [&](const std::vector<int64_t>& list, const std::string& key, LayerAttention kind) {
    for (int64_t v : list) {
      if (v < 1 || v > n)
        la.fail(key, "holds layer " + std::to_string(v) + "; layer numbers are 1-indexed in 1.." + std::to_string(n));
      if (seen[v - 1]++)
        la.fail(key, "holds layer " + std::to_string(v) +
                         " which is already listed (kda_layers and "
                         "full_attn_layers must partition 1.." +
                         std::to_string(n) + ")");
      c->layer_attention[v - 1] = kind;
    }
  };
  mark(kda, "kda_layers", LayerAttention::kKDA);
  mark(full, "full_attn_layers", LayerAttention::kMLA);
  for (int i = 0; i < n; ++i)
    if (!seen[i])
      la.fail("kda_layers", "and full_attn_layers do not list layer " + std::to_string(i + 1) +
                                " (they must partition 1.." + std::to_string(n) + ")");
}

// The KDA layers' keys (linear_attn_config).
void read_kda(const ConfigKeys& la, ModelConfig* c) {
  c->kda_num_heads = la.positive("num_heads", int64_t{1} << 12);
  c->kda_head_dim = la.positive("head_dim", int64_t{1} << 12);
  c->kda_conv_kernel = la.positive("short_conv_kernel_size", 64);
  la.require_bool("use_full_rank_gate", true, " (the full-rank sigmoid output gate g_proj)");
  c->kda_has_gate_lower_bound = la.has("gate_lower_bound");
  if (c->kda_has_gate_lower_bound) {
    c->kda_gate_lower_bound = static_cast<float>(la.number("gate_lower_bound"));
    if (!(c->kda_gate_lower_bound < 0))
      la.fail("gate_lower_bound", "must be negative (a decay), found " + std::to_string(c->kda_gate_lower_bound));
  }
  if (c->kda_num_heads > c->kda_head_dim)
    la.fail("num_heads", "is " + std::to_string(c->kda_num_heads) + " but A_log is stored padded to head_dim " +
                             std::to_string(c->kda_head_dim) + "; k3 needs num_heads <= head_dim");
}

// The MLA layers' keys.
void read_mla(const ConfigKeys& t, ModelConfig* c) {
  t.require_bool("mla_use_nope", true, " (gated NoPE MLA: no rotary embedding)");
  c->mla_num_heads = t.positive("num_attention_heads", int64_t{1} << 12);
  if (t.get("q_lora_rank").is_null())
    t.fail("q_lora_rank", "is null; k3 implements only the low-rank query (q_a_proj/q_b_proj)");
  c->q_lora_rank = t.positive("q_lora_rank", int64_t{1} << 17);
  c->kv_lora_rank = t.positive("kv_lora_rank", int64_t{1} << 17);
  c->qk_nope_head_dim = t.positive("qk_nope_head_dim", int64_t{1} << 12);
  c->qk_rope_head_dim = t.positive("qk_rope_head_dim", int64_t{1} << 12);
  c->v_head_dim = t.positive("v_head_dim", int64_t{1} << 12);
  c->mla_use_output_gate = t.boolean("mla_use_output_gate");
}

// The MoE keys: the dense layers, the router and the experts' shapes.
void read_moe(const ConfigKeys& t, ModelConfig* c) {
  c->first_k_dense_replace = static_cast<int>(t.integer("first_k_dense_replace"));
  const int n = c->num_hidden_layers;
  if (c->first_k_dense_replace < 0 || c->first_k_dense_replace > n)
    t.fail("first_k_dense_replace",
           "must be in 0.." + std::to_string(n) + ", found " + std::to_string(c->first_k_dense_replace));
  t.require_int("moe_layer_freq", 1, " (every layer after the dense ones is MoE)");
  t.require_int("num_nextn_predict_layers", 0, " (no multi-token-prediction layers)");
  t.require_string("moe_router_activation_func", "sigmoid", " (sigmoid router scores)");
  if (t.has("topk_method")) t.require_string("topk_method", "noaux_tc", " (top-k by score + correction bias)");
  t.require_int("num_expert_group", 1, " (group-limited routing is not implemented)");
  t.require_int("topk_group", 1, " (group-limited routing is not implemented)");
  c->num_experts = t.positive("num_experts", int64_t{1} << 16);
  c->num_experts_per_token = t.positive("num_experts_per_token", int64_t{1} << 12);
  if (c->num_experts_per_token > c->num_experts)
    t.fail("num_experts_per_token", "is " + std::to_string(c->num_experts_per_token) + ", more than num_experts " +
                                        std::to_string(c->num_experts));
  c->num_shared_experts = t.positive("num_shared_experts", int64_t{1} << 8);
  c->moe_intermediate_size = t.positive("moe_intermediate_size", int64_t{1} << 20);
  c->routed_expert_hidden_size = t.positive("routed_expert_hidden_size", int64_t{1} << 17);
  if (c->moe_intermediate_size % 32)
    t.fail("moe_intermediate_size", "is " + std::to_string(c->moe_intermediate_size) + ", not a multiple of 32");
  if (c->routed_expert_hidden_size % 32)
    t.fail("routed_expert_hidden_size",
           "is " + std::to_string(c->routed_expert_hidden_size) + ", not a multiple of 32");
  c->latent_moe_use_norm = t.boolean("latent_moe_use_norm");
  c->moe_renormalize = t.boolean("moe_renormalize");
  const double rsf = t.number("routed_scaling_factor");
  if (!(rsf > 0)) t.fail("routed_scaling_factor", "must be positive, found " + std::to_string(rsf));
  c->routed_scaling_factor = static_cast<float>(rsf);
}

// The stop ids, each once: the text config's, the wrapper's (when there is
// one) and generation_config.json's, each inside the vocabulary.
std::vector<int> read_stop_ids(const ConfigKeys& t, const ConfigKeys* wrapper,
                               const std::string& generation_config_json, const std::string& origin, int vocab_size) {
  std::vector<int> ids;
  collect_eos(t, "eos_token_id", &ids);
  if (wrapper) collect_eos(*wrapper, "eos_token_id", &ids);
  if (!generation_config_json.empty()) {
    simdjson::dom::parser gparser;
    simdjson::padded_string gpadded(generation_config_json);
    element groot;
    object gobj;
    const std::string gorigin = origin + " (generation_config.json)";
    if (gparser.parse(gpadded).get(groot) || groot.get_object().get(gobj))
      throw Error(ExitCode::kBadModel, gorigin + ": not a valid JSON object");
    ConfigKeys g(gorigin, gobj, "");
    collect_eos(g, "eos_token_id", &ids);
  }
  std::vector<int> unique;
  for (int id : ids) {
    if (id < 0 || id >= vocab_size)
      t.fail("eos_token_id",
             "holds " + std::to_string(id) + ", outside the vocabulary 0.." + std::to_string(vocab_size - 1));
    if (std::find(unique.begin(), unique.end(), id) == unique.end()) unique.push_back(id);
  }
  return unique;
}

}  // namespace

int ModelConfig::num_kda_layers() const {
  return static_cast<int>(std::count(layer_attention.begin(), layer_attention.end(), LayerAttention::kKDA));
}

int ModelConfig::num_mla_layers() const {
  return static_cast<int>(std::count(layer_attention.begin(), layer_attention.end(), LayerAttention::kMLA));
}

ModelConfig parse_model_config(const std::string& config_json, const std::string& generation_config_json,
                               const std::string& origin) {
  ModelConfig c;
  c.config_hash = XXH3_64bits(config_json.data(), config_json.size());

  simdjson::dom::parser parser;
  simdjson::padded_string padded(config_json);
  element root;
  if (auto err = parser.parse(padded).get(root))
    throw Error(ExitCode::kBadModel, origin + ": not valid JSON (" + simdjson::error_message(err) + ")");
  object root_obj;
  if (root.get_object().get(root_obj)) throw Error(ExitCode::kBadModel, origin + ": not a JSON object");
  ConfigKeys top(origin, root_obj, "");

  // Wrapper (model_type kimi_k3 with text_config) or the bare text config.
  const bool wrapped = top.has("text_config");
  if (wrapped) top.require_string("model_type", "kimi_k3", " as the wrapper of a text_config");
  ConfigKeys t = wrapped ? top.child("text_config") : top;
  t.require_string("model_type", "kimi_linear", " (the Kimi-K3 text model)");

  // Quantization: beside text_config in a wrapper, inside the config otherwise.
  // Absent means BF16 experts.
  const ConfigKeys* qparent = wrapped ? &top : &t;
  c.experts_mxfp4 = false;
  if (qparent->has("quantization_config")) {
    check_quantization(qparent->child("quantization_config"), &c);
  } else if (wrapped && t.has("quantization_config")) {
    t.fail("quantization_config",
           "sits inside text_config; in a wrapper config it must be at the top level beside text_config");
  }

  c.vocab_size = t.positive("vocab_size", int64_t{1} << 24);
  c.hidden_size = t.positive("hidden_size", int64_t{1} << 17);
  c.intermediate_size = t.positive("intermediate_size", int64_t{1} << 20);
  c.num_hidden_layers = t.positive("num_hidden_layers", int64_t{1} << 12);
  const double eps = t.number("rms_norm_eps");
  if (!(eps > 0 && eps < 1)) t.fail("rms_norm_eps", "must be in (0, 1), found " + std::to_string(eps));
  c.rms_norm_eps = static_cast<float>(eps);
  c.attn_res_block_size = t.positive("attn_res_block_size", int64_t{1} << 12);
  if (t.has("max_position_embeddings"))
    c.max_position_embeddings = t.positive("max_position_embeddings", int64_t{1} << 30);
  if (t.has("bos_token_id")) c.bos_token_id = static_cast<int>(t.integer("bos_token_id"));
  if (t.has("tie_word_embeddings")) t.require_bool("tie_word_embeddings", false, " (K3 has a separate lm_head)");

  // Activation.
  t.require_string("hidden_act", "situ", " (SiTU MLP)");
  c.situ_beta = static_cast<float>(t.number("activation_situ_beta"));
  if (!(c.situ_beta > 0)) t.fail("activation_situ_beta", "must be positive, found " + std::to_string(c.situ_beta));
  c.has_situ_linear_beta = t.has("activation_situ_linear_beta");
  if (c.has_situ_linear_beta) {
    c.situ_linear_beta = static_cast<float>(t.number("activation_situ_linear_beta"));
    if (!(c.situ_linear_beta > 0))
      t.fail("activation_situ_linear_beta", "must be positive, found " + std::to_string(c.situ_linear_beta));
  }

  // Layer kinds, then each kind's and the experts' keys.
  const ConfigKeys la = t.child("linear_attn_config");
  read_layer_kinds(la, &c);
  read_kda(la, &c);
  read_mla(t, &c);
  read_moe(t, &c);

  c.eos_token_ids = read_stop_ids(t, wrapped ? &top : nullptr, generation_config_json, origin, c.vocab_size);
  return c;
}

ModelConfig load_model_config(const std::string& model_dir) {
  const std::string path = path_join(model_dir, "config.json");
  if (!file_exists(model_dir)) throw Error(ExitCode::kBadModel, model_dir + ": model directory not found");
  if (!file_exists(path))
    throw Error(ExitCode::kBadModel, path + ": file not found (is " + model_dir + " a Kimi-K3 model directory?)");
  const std::string text = read_text_file(path, kMaxConfigBytes);
  const std::string gen_path = path_join(model_dir, "generation_config.json");
  const std::string gen = file_exists(gen_path) ? read_text_file(gen_path, kMaxConfigBytes) : std::string();
  ModelConfig config = parse_model_config(text, gen, path);
  // The tokenizer's eos_token stops generation too (SPEC section 3).
  const TokenId eos = tokenizer_eos_id(model_dir);
  if (eos != Vocabulary::kNoToken && eos < static_cast<TokenId>(config.vocab_size) &&
      std::find(config.eos_token_ids.begin(), config.eos_token_ids.end(), static_cast<int>(eos)) ==
          config.eos_token_ids.end())
    config.eos_token_ids.push_back(static_cast<int>(eos));
  return config;
}

void check_position_limit(const ModelConfig& config, uint64_t positions, const std::string& what) {
  const uint64_t limit = static_cast<uint64_t>(config.max_position_embeddings);
  if (limit == 0 || positions <= limit) return;
  throw Error(ExitCode::kUsage, "the run spans " + std::to_string(positions) + " positions (" + what +
                                    "), beyond the " + std::to_string(limit) +
                                    " the model was trained for (max_position_embeddings in config.json); "
                                    "lower them to at most " +
                                    std::to_string(limit));
}

}  // namespace k3
