// The draft's config.json is read by the model config's strict reader
// (model/config_keys.h): the real draft's config reads to its geometry, and
// each kind of bad key is refused naming the file, the key and what was found.
#include "draft/dspark_config.h"

#include <gtest/gtest.h>

#include <string>

#include "common/error.h"

namespace k3 {
namespace {

// The real draft's config with the first `from` replaced by `to`.
std::string edited(const std::string& from, const std::string& to) {
  std::string text = kimi_k3_dspark_config_json();
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

// The message of the kBadModel error parsing `text` throws ("" if none).
std::string refusal(const std::string& text) {
  try {
    parse_dspark_config(text, "draft/config.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadModel);
    return e.what();
  }
  return "";
}

TEST(DSparkConfig, RealConfigReads) {
  const DSparkConfig c = parse_dspark_config(kimi_k3_dspark_config_json(), "draft/config.json");
  EXPECT_EQ(c.hidden_size, 7168);
  EXPECT_EQ(c.num_hidden_layers, 5);
  EXPECT_EQ(c.vocab_size, 163840);
  EXPECT_EQ(c.target_layer_ids, (std::vector<int>{2, 23, 47, 71, 89}));
  EXPECT_EQ(c.rope_original_max_positions, 32768);
  EXPECT_TRUE(c.confidence_head);
}

TEST(DSparkConfig, BadKeysAreNamedWithWhatWasFound) {
  EXPECT_EQ(refusal(edited("\"hidden_size\": 7168", "\"hidden_size\": \"big\"")),
            "draft/config.json: key 'hidden_size' must be an integer, found \"big\"");
  EXPECT_EQ(refusal(edited("\"q_lora_rank\": 1536,", "")),
            "draft/config.json: key 'q_lora_rank' is missing (required; k3 does not assume a default)");
  EXPECT_EQ(refusal(edited("\"mla_use_nope\": false", "\"mla_use_nope\": true")),
            "draft/config.json: key 'mla_use_nope' is true; k3 implements only false (the draft rotates its rope "
            "dimensions)");
  EXPECT_EQ(refusal(edited("\"rope_type\": \"yarn\"", "\"rope_type\": 3")),
            "draft/config.json: key 'rope_parameters.rope_type' must be a string, found 3");
}

TEST(DSparkConfig, SizesKeepTheDraftLimits) {
  // 2^24 is the largest hidden size a draft may declare (a model's is 2^30).
  EXPECT_NE(refusal(edited("\"intermediate_size\": 14336", "\"intermediate_size\": 16777217"))
                .find("key 'intermediate_size' is 16777217, more than the 16777216"),
            std::string::npos);
  EXPECT_EQ(refusal(edited("[2, 23, 47, 71, 89]", "[2, 23, 4097]")),
            "draft/config.json: key 'target_layer_ids' must hold layer indices 0..4096");
  EXPECT_EQ(refusal(edited("[2, 23, 47, 71, 89]", "[2, \"x\"]")),
            "draft/config.json: key 'target_layer_ids' must be a list of integers, found element \"x\"");
}

}  // namespace
}  // namespace k3
