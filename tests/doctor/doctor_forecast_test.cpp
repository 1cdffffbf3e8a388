// Model byte counts against the tensors actually stored in the tiny
// checkpoint and against SPEC section 1's published K3 figures; preset
// recommendation and the per-token arithmetic.
#include <gtest/gtest.h>

#include "checkpoint/checkpoint.h"
#include "doctor/model_bytes.h"
#include "doctor/preset_forecast.h"
#include "runtime/presets.h"

using namespace k3;
using namespace k3::doctor;

namespace {
const std::string kTiny = std::string(K3_TEST_DATA) + "/k3-tiny";

ModelConfig tiny_config() { return load_model_config(kTiny); }
}  // namespace

TEST(ModelBytes, MatchesTheTensorsStoredInTheTinyCheckpoint) {
  Checkpoint ck = Checkpoint::open(kTiny);
  uint64_t trunk = 0, experts = 0, expert0 = 0, embed = 0;
  const std::string text = "language_model.";
  const std::string e0 = "language_model.model.layers.1.block_sparse_moe.experts.0.";
  for (const auto& [name, loc] : ck.tensors()) {
    if (name.compare(0, text.size(), text) != 0) continue;  // vision tower etc.
    if (name.find(".block_sparse_moe.experts.") != std::string::npos) {
      experts += loc.info->nbytes;
      if (name.compare(0, e0.size(), e0) == 0) expert0 += loc.info->nbytes;
    } else {
      trunk += loc.info->nbytes;
    }
    if (name == "language_model.model.embed_tokens.weight") embed = loc.info->nbytes;
  }
  ModelBytes b = model_bytes_from_config(tiny_config());
  EXPECT_EQ(b.trunk(), trunk);
  EXPECT_EQ(b.embedding, embed);
  EXPECT_EQ(b.one_expert, expert0);
  EXPECT_EQ(b.all_experts(), experts);
  EXPECT_EQ(b.moe_layers, 12);
}

TEST(ModelBytes, RealK3AgreesWithSpecFigures) {
  ModelBytes b = model_bytes_from_config(k3_reference_config());
  // SPEC section 1: one expert = 3 x 3584x3072 MXFP4 ~ 17.5 MB; experts ~1.45 TB;
  // trunk ~112 GB; a KDA+MoE layer's trunk ~1.25 GB; ~24 GB of experts per token.
  EXPECT_EQ(b.one_expert, 3u * (3584u * 3072u / 2 + 3584u * 3072u / 32));
  EXPECT_NEAR(double(b.all_experts()), 1.45e12, 0.02e12);
  EXPECT_NEAR(double(b.trunk()), 112e9, 3e9);
  EXPECT_NEAR(double(b.largest_moe_layer_trunk), 1.25e9, 0.05e9);
  EXPECT_NEAR(double(b.experts_per_token_bytes()), 25.8e9, 0.2e9);
  EXPECT_EQ(b.moe_layers, 92);
  EXPECT_EQ(b.experts_per_token, 16);
}

TEST(PresetForecast, MemoryIsTheSumOfItsParts) {
  const ModelBytes b = model_bytes_from_config(k3_reference_config());
  for (const Preset& p : presets()) {
    PresetForecast f = forecast_preset(p, b, std::nullopt);
    EXPECT_EQ(f.memory(), f.pinned_trunk + f.cache + f.stream_buffers + f.runtime) << p.name;
    EXPECT_LE(f.pinned_trunk, uint64_t(p.trunk_gb * 1e9 + 0.5)) << p.name;
    EXPECT_EQ(f.trunk_read + f.pinned_trunk, b.trunk_per_token()) << p.name;
    EXPECT_EQ(f.bytes_per_token(), f.trunk_read + f.expert_read);
    EXPECT_NEAR(f.hit_rate, p.cache_gb * 1e9 / double(b.all_experts()), 1e-9) << p.name;
  }
  PresetForecast given = forecast_preset(presets().front(), b, 0.25);
  EXPECT_FALSE(given.hit_rate_assumed);
  EXPECT_NEAR(double(given.expert_read), 0.75 * double(b.experts_per_token_bytes()), 1.0);
}

TEST(PresetForecast, RecommendsTheLargestPresetThatFits) {
  const ModelBytes b = model_bytes_from_config(k3_reference_config());
  for (uint64_t usable : {uint64_t(4e9), uint64_t(7.2e9), uint64_t(24e9), uint64_t(40e9), uint64_t(120e9),
                          uint64_t(300e9)}) {
    auto rec = recommend_preset(usable, b, std::nullopt);
    const PresetForecast* best = nullptr;
    std::vector<PresetForecast> all;
    for (const Preset& p : presets()) all.push_back(forecast_preset(p, b, std::nullopt));
    for (const PresetForecast& f : all)
      if (double(f.memory()) <= 0.9 * double(usable) && (!best || f.memory() >= best->memory())) best = &f;
    if (!best) {
      EXPECT_FALSE(rec) << usable;
      continue;
    }
    ASSERT_TRUE(rec) << usable;
    EXPECT_EQ(rec->preset.name, best->preset.name) << usable;
    EXPECT_LE(double(rec->memory()), 0.9 * double(usable));
  }
  // The preset table says laptop is for 8 GB machines: ~7.2 GB available there.
  auto eight = recommend_preset(uint64_t(7.2e9), b, std::nullopt);
  ASSERT_TRUE(eight);
  EXPECT_EQ(eight->preset.name, "laptop");
  EXPECT_FALSE(recommend_preset(uint64_t(4e9), b, std::nullopt));
  auto big = recommend_preset(uint64_t(300e9), b, std::nullopt);
  ASSERT_TRUE(big);
  EXPECT_EQ(big->preset.name, "max");
}
