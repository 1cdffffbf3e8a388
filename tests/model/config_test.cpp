// The strict config reader: the tiny fixture's config, its bare form, and
// every required key missing or holding a value k3 does not implement.
#include <gtest/gtest.h>
#include <unistd.h>

#include <simdjson.h>
#include <xxhash.h>
#include <filesystem>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "common/file.h"
#include "model/config.h"

namespace k3 {
namespace {

void write_text(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

std::string tiny_config() { return read_text_file(std::string(K3_TEST_DATA) + "/k3-tiny/config.json"); }

// Replaces the JSON value of the first `"key":` in `json` (whatever it is:
// number, string, list, object) with `value`.
std::string with_value(const std::string& json, const std::string& key, const std::string& value) {
  const std::string needle = "\"" + key + "\":";
  size_t at = json.find(needle);
  if (at == std::string::npos) throw std::runtime_error("test: no key " + key);
  size_t b = at + needle.size();
  while (json[b] == ' ') ++b;
  size_t e = b;
  int depth = 0;
  bool in_string = false;
  for (; e < json.size(); ++e) {
    const char ch = json[e];
    if (in_string) {
      if (ch == '\\') ++e;
      else if (ch == '"') in_string = false;
      continue;
    }
    if (ch == '"') in_string = true;
    else if (ch == '[' || ch == '{') ++depth;
    else if (ch == ']' || ch == '}') {
      if (depth == 0) break;
      --depth;
    } else if (ch == ',' && depth == 0) break;
    if (depth == 0 && !in_string && (ch == ']' || ch == '}' || ch == '"') && e > b) {
      ++e;
      break;
    }
  }
  return json.substr(0, b) + value + json.substr(e);
}

// Renames the first `"key":` so the key is absent.
std::string without(const std::string& json, const std::string& key) {
  const std::string needle = "\"" + key + "\":";
  size_t at = json.find(needle);
  if (at == std::string::npos) throw std::runtime_error("test: no key " + key);
  std::string out = json;
  out.replace(at, needle.size(), "\"" + key + "_absent_in_test\":");
  return out;
}

// The error from parsing `json`, or "" when it parses.
std::string error_of(const std::string& json, ExitCode* code = nullptr) {
  try {
    parse_model_config(json, "", "config.json");
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}

TEST(Config, TinyFixture) {
  const std::string text = tiny_config();
  ModelConfig c = load_model_config(std::string(K3_TEST_DATA) + "/k3-tiny");
  EXPECT_EQ(c.vocab_size, 8448);
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.num_hidden_layers, 13);
  EXPECT_EQ(c.attn_res_block_size, 4);
  EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-5f);
  // kda_layers [1,2,3,5,6,7,9,10,11], full_attn_layers [4,8,12,13] (1-indexed).
  const bool kda[13] = {1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 0};
  for (int i = 0; i < 13; ++i) EXPECT_EQ(c.is_kda_layer(i), kda[i]) << "layer " << i;
  EXPECT_EQ(c.num_kda_layers(), 9);
  EXPECT_EQ(c.num_mla_layers(), 4);
  EXPECT_TRUE(c.kda_has_gate_lower_bound);
  EXPECT_FLOAT_EQ(c.kda_gate_lower_bound, -5.0f);
  EXPECT_TRUE(c.experts_mxfp4);
  EXPECT_TRUE(c.has_situ_linear_beta);
  EXPECT_FLOAT_EQ(c.situ_linear_beta, 25.0f);
  EXPECT_EQ(c.first_k_dense_replace, 1);
  EXPECT_FALSE(c.is_moe_layer(0));
  EXPECT_TRUE(c.is_moe_layer(1));
  EXPECT_EQ(c.eos_token_ids, std::vector<int>{8193});
  EXPECT_EQ(c.config_hash, XXH3_64bits(text.data(), text.size()));
}

TEST(Config, BareTextConfigWithQuantizationInside) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(tiny_config());
  simdjson::dom::element root = parser.parse(padded);
  std::string text = simdjson::minify(root["text_config"]);
  const std::string quant = simdjson::minify(root["quantization_config"]);
  std::string bare = text.substr(0, text.size() - 1) + ",\"quantization_config\":" + quant + "}";
  ModelConfig c = parse_model_config(bare, "", "bare");
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_TRUE(c.experts_mxfp4);
  // Without quantization_config the experts are BF16.
  EXPECT_FALSE(parse_model_config(text, "", "bare").experts_mxfp4);
  // In a wrapper, quantization_config inside text_config is refused, not guessed.
  std::string wrapped_inside = "{\"model_type\":\"kimi_k3\",\"text_config\":" + bare + "}";
  EXPECT_NE(error_of(wrapped_inside).find("quantization_config"), std::string::npos);
}

TEST(Config, SwitchesWithDefinedAlternatives) {
  const std::string text = tiny_config();
  ModelConfig c = parse_model_config(without(text, "gate_lower_bound"), "", "t");
  EXPECT_FALSE(c.kda_has_gate_lower_bound);  // the softplus gate
  c = parse_model_config(without(text, "activation_situ_linear_beta"), "", "t");
  EXPECT_FALSE(c.has_situ_linear_beta);
  c = parse_model_config(with_value(text, "moe_renormalize", "false"), "", "t");
  EXPECT_FALSE(c.moe_renormalize);
  c = parse_model_config(with_value(text, "routed_scaling_factor", "2.5"), "", "t");
  EXPECT_FLOAT_EQ(c.routed_scaling_factor, 2.5f);
}

TEST(Config, EosFromGenerationConfigNumberOrList) {
  const std::string text = tiny_config();
  EXPECT_EQ(parse_model_config(text, "{\"eos_token_id\": [8193, 8194]}", "t").eos_token_ids,
            (std::vector<int>{8193, 8194}));
  EXPECT_EQ(parse_model_config(text, "{\"eos_token_id\": 8200}", "t").eos_token_ids, (std::vector<int>{8193, 8200}));
  EXPECT_NE(error_of(with_value(text, "eos_token_id", "\"x\"")).find("eos_token_id"), std::string::npos);
}

// K3's layout: config.json and generation_config.json name <|end_of_msg|>,
// tokenizer_config.json's eos_token is [EOS]; both stop generation.
TEST(Config, TokenizerEosTokenIsAStopIdToo) {
  const std::string dir = ::testing::TempDir() + "k3_config_eos_" + std::to_string(::getpid());
  ASSERT_EQ(system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  const std::string tiny = std::string(K3_TEST_DATA) + "/k3-tiny/";
  std::string config = tiny_config();
  for (size_t at = 0; (at = config.find("\"eos_token_id\": 8193", at)) != std::string::npos;)
    config.replace(at, 20, "\"eos_token_id\": 8194");
  write_text(dir + "/config.json", config);
  write_text(dir + "/generation_config.json", "{\"eos_token_id\": 8194}");
  write_text(dir + "/tokenizer_config.json", read_text_file(tiny + "tokenizer_config.json"));
  EXPECT_EQ(load_model_config(dir).eos_token_ids, (std::vector<int>{8194, 8193}));
  // No tokenizer config: the config files' ids alone.
  ASSERT_EQ(std::remove((dir + "/tokenizer_config.json").c_str()), 0);
  EXPECT_EQ(load_model_config(dir).eos_token_ids, (std::vector<int>{8194}));
  // The fixture itself names [EOS] everywhere: one stop id.
  EXPECT_EQ(load_model_config(tiny).eos_token_ids, (std::vector<int>{8193}));
  ASSERT_EQ(system(("rm -rf " + dir).c_str()), 0);
}

TEST(Config, EveryRequiredKeyMissingIsNamed) {
  const std::string text = tiny_config();
  const char* keys[] = {"vocab_size",
                        "hidden_size",
                        "intermediate_size",
                        "num_hidden_layers",
                        "rms_norm_eps",
                        "attn_res_block_size",
                        "hidden_act",
                        "activation_situ_beta",
                        "linear_attn_config",
                        "kda_layers",
                        "full_attn_layers",
                        "num_heads",
                        "head_dim",
                        "short_conv_kernel_size",
                        "use_full_rank_gate",
                        "mla_use_nope",
                        "num_attention_heads",
                        "q_lora_rank",
                        "kv_lora_rank",
                        "qk_nope_head_dim",
                        "qk_rope_head_dim",
                        "v_head_dim",
                        "mla_use_output_gate",
                        "first_k_dense_replace",
                        "moe_layer_freq",
                        "num_nextn_predict_layers",
                        "moe_router_activation_func",
                        "num_expert_group",
                        "topk_group",
                        "num_experts",
                        "num_experts_per_token",
                        "num_shared_experts",
                        "moe_intermediate_size",
                        "routed_expert_hidden_size",
                        "latent_moe_use_norm",
                        "moe_renormalize",
                        "routed_scaling_factor",
                        "model_type",
                        "quant_method",
                        "format",
                        "config_groups",
                        "num_bits",
                        "group_size",
                        "type",
                        "strategy",
                        "symmetric",
                        "weights"};
  for (const char* key : keys) {
    ExitCode code = ExitCode::kOk;
    const std::string err = error_of(without(text, key), &code);
    EXPECT_NE(err.find(std::string(key) + "'"), std::string::npos) << key << ": " << err;
    EXPECT_NE(err.find("missing"), std::string::npos) << key << ": " << err;
    EXPECT_EQ(code, ExitCode::kBadModel) << key;
  }
}

TEST(Config, UnimplementedValuesAreRefusedNamingKeyAndValue) {
  const std::string text = tiny_config();
  struct Case {
    const char* key;
    const char* value;
    const char* expect_in_message;
  };
  const Case cases[] = {
      {"hidden_act", "\"silu\"", "silu"},
      {"mla_use_nope", "false", "false"},
      {"moe_router_activation_func", "\"softmax\"", "softmax"},
      {"num_nextn_predict_layers", "1", "is 1"},
      {"moe_layer_freq", "2", "is 2"},
      {"num_expert_group", "8", "is 8"},
      {"topk_group", "4", "is 4"},
      {"use_full_rank_gate", "false", "false"},
      {"quant_method", "\"gptq\"", "gptq"},
      {"num_bits", "8", "is 8"},
      {"group_size", "16", "is 16"},
      {"strategy", "\"tensor\"", "tensor"},
      {"symmetric", "false", "false"},
      {"moe_intermediate_size", "48", "48"},
      {"routed_expert_hidden_size", "40", "40"},
      {"hidden_size", "\"64\"", "\"64\""},
      {"q_lora_rank", "null", "null"},
      {"num_experts_per_token", "17", "17"},
      {"tie_word_embeddings", "true", "true"},
      {"rms_norm_eps", "0", "0"},
      {"gate_lower_bound", "1.0", "1.0"},
      {"topk_method", "\"greedy\"", "greedy"},
      {"kda_layers", "[0,1,2,3,5,6,7,9,10,11]", "holds layer 0"},
      {"full_attn_layers", "[3,4,8,12,13]", "holds layer 3 which is already listed"},
      {"kda_layers", "[1,2,3,5,6,7,9,10]", "do not list layer 11"},
      {"full_attn_layers", "[4,8,12,14]", "holds layer 14"},
      {"model_type", "\"deepseek_v3\"", "deepseek_v3"},
  };
  for (const Case& c : cases) {
    ExitCode code = ExitCode::kOk;
    const std::string err = error_of(with_value(text, c.key, c.value), &code);
    EXPECT_NE(err.find(std::string(c.key) + "'"), std::string::npos) << c.key << "=" << c.value << ": " << err;
    EXPECT_NE(err.find(c.expect_in_message), std::string::npos) << c.key << "=" << c.value << ": " << err;
    EXPECT_EQ(code, ExitCode::kBadModel) << c.key;
  }
}

TEST(Config, MalformedJsonAndMissingDirectory) {
  ExitCode code = ExitCode::kOk;
  EXPECT_NE(error_of("{\"text_config\": ", &code).find("not valid JSON"), std::string::npos);
  EXPECT_EQ(code, ExitCode::kBadModel);
  try {
    load_model_config("/nonexistent/k3-model");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadModel);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/k3-model"), std::string::npos);
  }
}

TEST(Config, AbsurdSizesAreRefusedUpFront) {
  const std::string base = tiny_config();
  // Each far beyond any real model (K3 itself is well inside every bound).
  const std::pair<const char*, const char*> cases[] = {
      {"num_hidden_layers", "1000000000"}, {"hidden_size", "1000000"},  {"vocab_size", "100000000"},
      {"intermediate_size", "100000000"},  {"num_experts", "1000000"},  {"num_attention_heads", "100000"},
      {"kv_lora_rank", "10000000"},        {"q_lora_rank", "10000000"}, {"moe_intermediate_size", "100000000"},
      {"qk_rope_head_dim", "100000"},      {"v_head_dim", "100000"},    {"num_shared_experts", "100000"}};
  for (const auto& [key, value] : cases) {
    ExitCode code = ExitCode::kOk;
    const std::string err = error_of(with_value(base, key, value), &code);
    EXPECT_EQ(code, ExitCode::kBadModel) << key;
    EXPECT_NE(err.find(std::string(key) + "' is " + value + ", more than"), std::string::npos) << err;
  }
}

TEST(Config, ConfigThatIsNotARegularFileIsRefused) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("k3-config-zero-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::create_symlink("/dev/zero", dir / "config.json");
  try {
    load_model_config(dir.string());
    ADD_FAILURE() << "a config.json linked to /dev/zero was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadModel);
    EXPECT_NE(std::string(e.what()).find("config.json: is not a regular file"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace k3
