// Memory plans in K3's real geometry, from the generator's config and tensor
// list (nothing is written): a 100,000-position
// context adds exactly its 5.5 GB of MLA latent cache, and a 10M-position
// context needs hundreds of GB, which the refusal check compares against
// the memory available. The laptop breakdown is printed, not asserted: it
// is a forecast to compare with the 8 GB target, not a property of the code.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "io/aligned_buffer.h"
#include "model/config.h"
#include "planning/memory_plan.h"
#include "synth/synth_checkpoint.h"
#include "trunk/layout.h"

using namespace k3;

namespace {
// The layout k3-pack would write: one section per layer, the embedding and
// the head, every tensor 4096-aligned.
TrunkLayout k3_layout(const std::vector<SynthTensor>& tensors) {
  TrunkLayout t;
  uint64_t pos = 0;
  for (const SynthTensor& s : tensors) {
    if (s.vision || s.t.group == TensorGroup::kRoutedExpert) continue;
    const std::string name = s.t.group == TensorGroup::kEmbedding ? "embedding"
                             : s.t.group == TensorGroup::kHead    ? "head"
                                                                  : "layer." + std::to_string(s.t.layer);
    if (t.sections.empty() || t.sections.back().name != name) {
      if (!t.sections.empty()) t.sections.back().length = align_up(pos) - t.sections.back().offset;
      pos = align_up(pos);
      TrunkSection sec;
      sec.name = name;
      sec.layer = s.t.group == TensorGroup::kLayerTrunk ? s.t.layer : -1;
      sec.offset = pos;
      t.sections.push_back(sec);
    }
    pos = align_up(pos) + s.nbytes();
  }
  t.sections.back().length = align_up(pos) - t.sections.back().offset;
  t.file_size = align_up(pos);
  return t;
}
}  // namespace

TEST(TrueScalePlan, K3GeometryLaptopFitsAndContextIsPlannedExactly) {
  SynthGeometry g;
  ASSERT_TRUE(synth_preset("k3", &g));
  const ModelConfig c = parse_model_config(synth_config_json(g), synth_generation_config_json(g), "k3");
  const std::vector<SynthTensor> tensors = synth_tensors(g);
  const TrunkLayout layout = k3_layout(tensors);
  EXPECT_NEAR(layout.file_size / 1e9, 113.5, 0.5);
  // One expert: w1, w3 [3072, 3584] and w2 [3584, 3072] MXFP4 with their scales.
  const uint64_t expert = 3 * (3072ull * 3584 / 2 + 3072ull * 3584 / 32);
  EXPECT_EQ(expert, 17547264u);
  const uint64_t slot = align_up(expert);

  RunRequest req;  // laptop: 3.0 GB of trunk pinned, 1.0 GB of expert cache
  req.trunk_budget = 3000000000ull;
  req.cache_budget = 1000000000ull;
  req.tensor_count = tensors.size();
  req.batch = 5;
  req.context = 8;
  const MemoryPlan small = plan_memory(c, layout, slot, req);
  EXPECT_LE(small.pinned_bytes, req.trunk_budget);
  EXPECT_EQ(small.cache_slots, std::max<uint64_t>(req.cache_budget / slot, 32));
  EXPECT_EQ(small.kda_state_bytes, 69ull * (96 * 128 * 128 + 3 * 3 * 96 * 128) * 4);
  // Where the laptop forecast goes at true scale (printed for the README).
  std::printf(
      "K3 laptop, 5 tokens: pinned %.2f GB, stream buffers %.2f GB, cache %.2f GB, KDA %.2f GB, MLA %.4f GB, "
      "activations %.2f GB, I/O+index %.2f GB = %.2f GB\n",
      small.pinned_bytes / 1e9, small.stream_buffer_bytes / 1e9, small.cache_bytes / 1e9, small.kda_state_bytes / 1e9,
      small.mla_cache_bytes / 1e9, small.activation_bytes / 1e9, small.io_bytes / 1e9, small.peak_rss / 1e9);

  req.context = 100000;
  const MemoryPlan p100k = plan_memory(c, layout, slot, req);
  EXPECT_EQ(p100k.mla_cache_bytes, 24ull * 100000 * (512 + 64) * 4);  // 5.53 GB
  EXPECT_GT(p100k.peak_rss, small.peak_rss + p100k.mla_cache_bytes - small.mla_cache_bytes);

  req.context = 10000000;
  const MemoryPlan p10m = plan_memory(c, layout, slot, req);
  EXPECT_EQ(p10m.mla_cache_bytes, 24ull * 10000000 * (512 + 64) * 4);  // 553 GB
  EXPECT_GT(p10m.peak_rss, 550ull * 1000 * 1000 * 1000);
  // What k3-forward decides with them: on a 24 GB machine like the one this
  // runs on, 100,000 positions start and 10M are refused before allocating;
  // the laptop plan for a short prompt fits an 8 GiB cgroup.
  EXPECT_TRUE(plan_fits(p100k, 24000000000ull)) << p100k.peak_rss;
  EXPECT_FALSE(plan_fits(p10m, 24000000000ull));
  EXPECT_FALSE(plan_fits(p10m, 512000000000ull));  // not even with 512 GB: the latent cache alone is 553 GB
  EXPECT_TRUE(plan_fits(small, 8ull << 30)) << small.peak_rss;
  EXPECT_FALSE(plan_fits(p100k, 8ull << 30));

  // The forecasts --list-presets gives for K3 (its default context of 4096
  // and batch of 256), for the README's comparison with published figures.
  struct P {
    const char* name;
    double trunk, cache;
  };
  req.context = 4096;
  req.batch = 256;
  for (const P& pr :
       {P{"laptop", 3, 1}, P{"desktop", 16, 10}, P{"workstation", 60, 30}, P{"server", 110, 13}, P{"max", 110, 109}}) {
    req.trunk_budget = static_cast<uint64_t>(pr.trunk * 1e9);
    req.cache_budget = static_cast<uint64_t>(pr.cache * 1e9);
    const MemoryPlan p = plan_memory(c, layout, slot, req);
    std::printf("K3 %-12s forecast peak RSS %6.1f GB (pinned trunk %6.1f GB, %5llu expert slots)\n", pr.name,
                p.peak_rss / 1e9, p.pinned_bytes / 1e9, static_cast<unsigned long long>(p.cache_slots));
  }
}
