// Model byte counts against the tensors actually stored in the tiny
// checkpoint and against SPEC section 1's published K3 figures; preset
// recommendation and the per-token arithmetic.
#include <gtest/gtest.h>

#include <cstdio>

#include "checkpoint/checkpoint.h"
#include "doctor/model_bytes.h"
#include "doctor/preset_forecast.h"
#include "expert_cache/expert_index.h"
#include "model/tensor_manifest.h"
#include "planning/memory_plan.h"
#include "planning/preset_plan.h"
#include "planning/presets.h"
#include "synth/synth_geometry.h"
#include "trunk/plan.h"

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
  const ModelConfig c = k3_reference_config();
  const ModelBytes b = model_bytes_from_config(c);
  const PlanModel pm = plan_model_for_config(c);
  for (const Preset& p : presets()) {
    PresetForecast f = forecast_preset(p, pm, b, std::nullopt);
    EXPECT_EQ(f.memory(), f.pinned_trunk + f.cache + f.stream_buffers + f.runtime + f.draft) << p.name;
    EXPECT_EQ(f.memory(), f.plan.peak_rss) << p.name;
    EXPECT_LE(f.pinned_trunk, uint64_t(p.trunk_gb * 1e9 + 0.5)) << p.name;
    // Pinned and streamed sections cover every layer and the head: what is
    // not pinned is read each token (a streamed head: its lm_head only).
    uint64_t streamed = 0;
    for (int s : f.plan.streamed) streamed += pm.layout.sections[s].length;
    EXPECT_LE(f.trunk_read, streamed) << p.name;
    EXPECT_GE(f.trunk_read + f.plan.head_small_bytes + 4096 * 4, streamed) << p.name;
    EXPECT_EQ(f.bytes_per_token(), f.trunk_read + f.expert_read);
    EXPECT_NEAR(f.hit_rate, double(f.plan.cache_slots) / (896.0 * 92), 1e-12) << p.name;
  }
  PresetForecast given = forecast_preset(presets().front(), pm, b, 0.25);
  EXPECT_FALSE(given.hit_rate_assumed);
  EXPECT_NEAR(double(given.expert_read), 0.75 * double(b.experts_per_token_bytes()), 1.0);
}

TEST(PresetForecast, RecommendsTheLargestPresetThatFits) {
  const ModelConfig c = k3_reference_config();
  const ModelBytes b = model_bytes_from_config(c);
  const PlanModel pm = plan_model_for_config(c);
  for (uint64_t usable : {uint64_t(4e9), uint64_t(7.2e9), uint64_t(8ull << 30), uint64_t(24e9), uint64_t(40e9),
                          uint64_t(120e9), uint64_t(300e9)}) {
    auto rec = recommend_preset(usable, pm, b, std::nullopt);
    const PresetForecast* best = nullptr;
    std::vector<PresetForecast> all;
    for (const Preset& p : presets()) all.push_back(forecast_preset(p, pm, b, std::nullopt));
    for (const PresetForecast& f : all)
      if (f.memory() <= usable / 10 * 9 && (!best || f.memory() >= best->memory())) best = &f;
    if (!best) {
      EXPECT_FALSE(rec) << usable;
      continue;
    }
    ASSERT_TRUE(rec) << usable;
    EXPECT_EQ(rec->preset.name, best->preset.name) << usable;
    EXPECT_LE(double(rec->memory()), 0.9 * double(usable));
  }
  // The preset table says laptop is for 8 GB machines: an 8 GiB cgroup (the
  // README's true-scale run) holds it; 4 GB holds the floor (min, 1.36 GB);
  // 1.4 GB holds nothing.
  auto eight = recommend_preset(8ull << 30, pm, b, std::nullopt);
  ASSERT_TRUE(eight);
  EXPECT_EQ(eight->preset.name, "laptop");
  auto four = recommend_preset(uint64_t(4e9), pm, b, std::nullopt);
  ASSERT_TRUE(four);
  EXPECT_EQ(four->preset.name, "min");
  EXPECT_FALSE(recommend_preset(uint64_t(1.4e9), pm, b, std::nullopt));
  auto big = recommend_preset(uint64_t(300e9), pm, b, std::nullopt);
  ASSERT_TRUE(big);
  EXPECT_EQ(big->preset.name, "max");
}

// The forecast is k3-forward's memory plan, for a checkpoint on disk (the
// tiny fixture, as --list-presets plans it) and for K3's geometry known only
// by its config (the generator's K3 config, planned from the config alone).
TEST(PresetForecast, EqualsTheMemoryPlanOfEachPreset) {
  const ModelConfig tiny = tiny_config();
  const Checkpoint ck = Checkpoint::open(kTiny);
  const PlanModel tiny_pm = plan_model_for_checkpoint(tiny, ck);
  const ModelBytes tiny_b = model_bytes_from_config(tiny);

  SynthGeometry g;
  ASSERT_TRUE(synth_preset("k3", &g));
  const ModelConfig k3 = parse_model_config(synth_config_json(g), synth_generation_config_json(g), "k3");
  const ModelBytes k3_b = model_bytes_from_config(k3_reference_config());
  const PlanModel k3_pm = plan_model_for_config(k3_reference_config());

  for (const Preset& p : presets()) {
    RunRequest req;  // --list-presets: packed trunk, context 4096, the preset's batch and blocks, 8 I/O threads,
                     // --threads 0
    req.packed_trunk = true;
    req.trunk_budget = static_cast<uint64_t>(p.trunk_gb * 1e9);
    req.cache_budget = static_cast<uint64_t>(p.cache_gb * 1e9);
    req.context = 4096;
    req.batch = p.max_batch;
    req.block_bytes = static_cast<uint64_t>(p.block_mb * 1e6);
    req.io_threads = 8;
    req.compute_threads = 0;

    req.tensor_count = ck.tensor_count();
    const MemoryPlan tiny_plan =
        plan_memory(tiny, plan_trunk(expected_tensors(tiny), ck), ExpertIndex(tiny, ck).slot_bytes(), req);
    const PresetForecast tf = forecast_preset(p, tiny_pm, tiny_b, std::nullopt);
    EXPECT_EQ(tf.memory(), tiny_plan.peak_rss) << p.name;
    EXPECT_EQ(tf.plan.peak_rss, tiny_plan.peak_rss) << p.name;

    req.tensor_count = expected_tensors(k3).size();
    const MemoryPlan k3_plan = plan_memory_for_config(k3, req);
    const PresetForecast kf = forecast_preset(p, k3_pm, k3_b, std::nullopt);
    EXPECT_EQ(kf.memory(), k3_plan.peak_rss) << p.name;
    if (p.name == "laptop")
      std::printf("laptop forecast: tiny %llu bytes, K3 %llu bytes\n", (unsigned long long)tf.memory(),
                  (unsigned long long)kf.memory());
  }
}

// With a draft model (k3-doctor --draft) each preset's memory is still its
// plan's peak: the draft's bytes are a part of their own, in the table as in
// the recommendation.
TEST(PresetForecast, CountsTheDraftModel) {
  const ModelConfig c = k3_reference_config();
  const ModelBytes b = model_bytes_from_config(c);
  const PlanModel pm = plan_model_for_config(c);
  RunRequest run;
  run.draft.resident = 3'000'000'000;  // a draft of about K3-DSpark's size
  run.draft.per_position = 1000;
  for (const Preset& p : presets()) {
    const PresetForecast plain = forecast_preset(p, pm, b, std::nullopt);
    const PresetForecast f = forecast_preset(p, pm, b, std::nullopt, run);
    EXPECT_EQ(f.draft, f.plan.draft_bytes) << p.name;
    EXPECT_EQ(f.draft, run.draft.resident + 1000 * kPresetListContext) << p.name;
    EXPECT_EQ(f.memory(), f.plan.peak_rss) << p.name;
    EXPECT_EQ(f.memory(), plain.memory() + f.draft) << p.name;
  }
}
