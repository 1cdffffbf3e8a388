// Strict reader for a DSpark draft's config.json (docs/dspark.md): every key
// the draft pass depends on is read and checked; a missing key, a wrong type
// or a value the pass does not implement is an error naming the key.
#include "draft/dspark_config.h"

#include <simdjson.h>
#include <xxhash.h>

#include "common/error.h"
#include "common/file.h"
#include "common/setting_spelling.h"
#include "model/config.h"
#include "model/config_keys.h"

namespace k3 {

namespace {

using simdjson::dom::element;
using simdjson::dom::object;

// Sizes beyond any real draft are refused before anything is allocated.
constexpr int64_t kMaxSize = int64_t{1} << 24;

}  // namespace

DSparkConfig load_dspark_config(const std::string& dir) {
  const std::string path = dir + "/config.json";
  if (!file_exists(path))
    throw Error(ExitCode::kBadModel,
                path + ": no config.json; --draft takes the directory of a Kimi-K3-DSpark checkpoint");
  return parse_dspark_config(read_text_file(path, 16ull << 20), path);
}

namespace {

// The document's top-level object; each refusal says what is wrong, so that
// the file can be fixed.
object config_object(simdjson::dom::parser& parser, const std::string& text, const std::string& path) {
  element root;
  object obj;
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0)
    throw Error(ExitCode::kBadModel, path +
                                         ": begins with a byte-order mark (bytes EF BB BF), which JSON does not "
                                         "allow: save the file without it");
  if (const auto err = parser.parse(text).get(root))
    throw Error(ExitCode::kBadModel,
                path + ": not valid JSON (" + simdjson::error_message(err) +
                    (err == simdjson::NUMBER_ERROR
                         ? "; a number beyond a double's range, such as 1e999, is one no reader takes as written"
                         : "") +
                    ")");
  if (root.get_object().get(obj))
    throw Error(ExitCode::kBadModel, path + ": holds " +
                                         (root.is_array()    ? "an array"
                                          : root.is_string() ? "a string"
                                          : root.is_null()   ? "null"
                                          : root.is_bool()   ? "true or false"
                                                             : "a number") +
                                         ", not the JSON object of a config");
  return obj;
}

// rope_parameters: YaRN's, the only rope the draft pass implements.
void read_rope(const ConfigKeys& k, DSparkConfig& c) {
  const ConfigKeys rope = k.child("rope_parameters");
  if (rope.string("rope_type") != "yarn")
    rope.fail("rope_type", "is \"" + rope.string("rope_type") + "\"; the draft pass implements only \"yarn\"");
  c.rope_theta = rope.number("rope_theta");
  c.rope_factor = rope.number("factor");
  c.rope_original_max_positions = rope.positive("original_max_position_embeddings", int64_t{1} << 30);
  c.beta_fast = rope.number("beta_fast");
  c.beta_slow = rope.number("beta_slow");
  c.mscale = rope.has("mscale") ? rope.number("mscale") : 1.0;
  c.mscale_all_dim = rope.has("mscale_all_dim") ? rope.number("mscale_all_dim") : 0.0;
  if (!(c.rope_theta > 1) || !(c.rope_factor >= 1) || !(c.beta_fast > c.beta_slow) || !(c.beta_slow > 0))
    rope.fail("rope_theta",
              "and factor/beta_fast/beta_slow are out of range (theta > 1, factor >= 1, beta_fast > beta_slow > 0)");
}

// The draft's link to its target (the layers it taps, their width) and its
// heads: the mask id, the Markov head, the confidence head, the block size.
void read_draft_heads(const ConfigKeys& k, DSparkConfig& c) {
  for (int64_t v : k.int_list("target_layer_ids")) {
    if (v < 0 || v > 4096) k.fail("target_layer_ids", "must hold layer indices 0..4096");
    c.target_layer_ids.push_back(static_cast<int>(v));
  }
  if (c.target_layer_ids.empty()) k.fail("target_layer_ids", "is empty");
  if (k.has("num_target_layers") && k.integer("num_target_layers") != c.num_taps())
    k.fail("num_target_layers", "differs from the length of target_layer_ids");
  c.target_hidden_size = k.positive("target_hidden_size", kMaxSize);
  c.target_num_hidden_layers = k.positive("target_num_hidden_layers", 4096);
  c.mask_token_id = static_cast<int>(k.integer("mask_token_id"));
  if (c.mask_token_id < 0 || c.mask_token_id >= c.vocab_size) k.fail("mask_token_id", "is outside the vocabulary");
  c.markov_rank = k.positive("markov_rank", 1 << 16);
  if (k.has("markov_head_type") && k.string("markov_head_type") != "vanilla")
    k.fail("markov_head_type", "is \"" + k.string("markov_head_type") + "\"; only \"vanilla\" is implemented");
  c.confidence_head = k.has("enable_confidence_head") && k.boolean("enable_confidence_head");
  if (c.confidence_head && k.has("confidence_head_with_markov") && !k.boolean("confidence_head_with_markov"))
    k.fail("confidence_head_with_markov", "is false; only the head over [hidden ; Markov embedding] is implemented");
  if (k.has("block_size")) c.block_size = k.positive("block_size", 64);
}

}  // namespace

DSparkConfig parse_dspark_config(const std::string& text, const std::string& path) {
  simdjson::dom::parser parser;
  const object obj = config_object(parser, text, path);
  const ConfigKeys k(path, obj);
  DSparkConfig c;
  if (k.string("model_type") != "k3_dspark")
    k.fail("model_type", "is \"" + k.string("model_type") + "\"; a DSpark draft has \"k3_dspark\"");
  c.hidden_size = k.positive("hidden_size", kMaxSize);
  c.intermediate_size = k.positive("intermediate_size", kMaxSize);
  c.num_hidden_layers = k.positive("num_hidden_layers", 1024);
  c.num_heads = k.positive("num_attention_heads", 4096);
  if (k.has("num_key_value_heads") && k.integer("num_key_value_heads") != c.num_heads)
    k.fail("num_key_value_heads", "differs from num_attention_heads; MLA has one key/value per head");
  c.q_lora_rank = k.positive("q_lora_rank", kMaxSize);
  c.kv_lora_rank = k.positive("kv_lora_rank", kMaxSize);
  c.qk_nope_head_dim = k.positive("qk_nope_head_dim", 4096);
  c.qk_rope_head_dim = k.positive("qk_rope_head_dim", 4096);
  if (c.qk_rope_head_dim % 2) k.fail("qk_rope_head_dim", "must be even (rope rotates pairs)");
  c.v_head_dim = k.positive("v_head_dim", 4096);
  c.vocab_size = k.positive("vocab_size", int64_t{1} << 26);
  if (k.has("draft_vocab_size") && k.integer("draft_vocab_size") != c.vocab_size)
    k.fail("draft_vocab_size", "differs from vocab_size; a vocabulary map (d2t) is not implemented");
  c.rms_norm_eps = static_cast<float>(k.number("rms_norm_eps"));
  if (!(c.rms_norm_eps > 0)) k.fail("rms_norm_eps", "must be positive");
  k.require_bool("mla_use_nope", false, " (the draft rotates its rope dimensions)");
  k.require_bool("mla_use_output_gate", false, " (the draft's attention has no output gate)");
  if (k.has("hidden_act") && k.string("hidden_act") != "silu")
    k.fail("hidden_act", "is \"" + k.string("hidden_act") + "\"; the draft MLP implements only \"silu\"");

  read_rope(k, c);

  read_draft_heads(k, c);
  c.config_hash = XXH3_64bits(text.data(), text.size());
  return c;
}

const char* kimi_k3_dspark_config_json() {
  // Inferact/Kimi-K3-DSpark's config.json (the keys the draft pass reads).
  return R"({"model_type": "k3_dspark", "hidden_size": 7168, "intermediate_size": 14336,
    "num_hidden_layers": 5, "num_attention_heads": 64, "num_key_value_heads": 64, "q_lora_rank": 1536,
    "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "mla_use_nope": false, "mla_use_output_gate": false, "vocab_size": 163840, "draft_vocab_size": 163840,
    "rms_norm_eps": 1e-05, "rope_parameters": {"rope_type": "yarn", "factor": 32.0,
    "original_max_position_embeddings": 32768, "rope_theta": 50000.0, "beta_fast": 32, "beta_slow": 1,
    "mscale": 1.0, "mscale_all_dim": 1.0}, "num_target_layers": 5, "target_hidden_size": 7168,
    "target_num_hidden_layers": 93, "target_layer_ids": [2, 23, 47, 71, 89], "mask_token_id": 163837,
    "markov_rank": 256, "markov_head_type": "vanilla", "enable_confidence_head": true,
    "confidence_head_with_markov": true})";
}

DSparkConfig kimi_k3_dspark_geometry() {
  return parse_dspark_config(kimi_k3_dspark_config_json(), "Kimi-K3-DSpark geometry");
}

void check_draft_fits(const DSparkConfig& d, const ModelConfig& t, const std::string& dir) {
  auto refuse = [&](const std::string& what) {
    throw Error(ExitCode::kBadModel,
                spelled(kDraftDirSetting) + " " + dir + ": " + what + "; this draft was trained for another model");
  };
  if (d.hidden_size != t.hidden_size || d.target_hidden_size != t.hidden_size)
    refuse("its hidden size " + std::to_string(d.hidden_size) + " (target_hidden_size " +
           std::to_string(d.target_hidden_size) + ") is not the model's " + std::to_string(t.hidden_size));
  if (d.vocab_size != t.vocab_size)
    refuse("its vocabulary of " + std::to_string(d.vocab_size) + " ids is not the model's " +
           std::to_string(t.vocab_size));
  if (d.target_num_hidden_layers != t.num_hidden_layers)
    refuse("it was made for a target of " + std::to_string(d.target_num_hidden_layers) + " layers, the model has " +
           std::to_string(t.num_hidden_layers));
  for (int id : d.target_layer_ids)
    if (id >= t.num_hidden_layers)
      refuse("its target layer " + std::to_string(id) + " is past the model's last layer " +
             std::to_string(t.num_hidden_layers - 1));
}

}  // namespace k3
