// The head streams in lm_head row blocks: logits are byte-identical to the
// resident path for any block size and budget (on the tiny fixture and on a
// generated checkpoint), and the memory plan at K3's real geometry keeps 3 GB
// of trunk and 1 GB of cache in whole layers under 8 GiB because no buffer is
// the size of the head.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint.h"
#include "common/thread_pool.h"
#include "expert_cache/expert_index.h"
#include "lib/synth_models.h"
#include "lib/test_util.h"
#include "model/config.h"
#include "model/forward_pass.h"
#include "model/k3_geometry.h"
#include "model/tensor_manifest.h"
#include "planning/memory_plan.h"
#include "planning/presets.h"
#include "runtime/resident_weights.h"
#include "runtime/streaming_weights.h"
#include "synth/synth_checkpoint.h"
#include "synth/synth_geometry.h"
#include "trunk/writer.h"

namespace fs = std::filesystem;
using namespace k3;

using k3::test::fresh_dir;
namespace {

const std::string kTiny = std::string(K3_TEST_DATA) + "/k3-tiny";

// Logits of a prefill over `prompt` (every row) followed by `decode` greedy
// steps (last row), concatenated.
std::vector<float> run(const ModelConfig& c, WeightSource& w, const std::vector<int32_t>& prompt, int decode,
                       int threads) {
  ThreadPool pool(threads);
  ForwardPass engine(c, w, pool);
  SequenceState state;
  engine.reset(state);
  const size_t vocab = c.vocab_size;
  std::vector<float> all(prompt.size() * vocab);
  engine.forward(state, prompt, LogitRows::kAll, all.data());
  std::vector<float> last(all.end() - vocab, all.end());
  for (int s = 0; s < decode; ++s) {
    int32_t id = 0;
    for (size_t v = 1; v < vocab; ++v)
      if (last[v] > last[id]) id = static_cast<int32_t>(v);
    engine.forward(state, std::vector<int32_t>{id}, LogitRows::kLast, last.data());
    all.insert(all.end(), last.begin(), last.end());
  }
  return all;
}

struct Budget {
  uint64_t trunk, cache, head_block;
};

// Runs the model resident, then streaming from a packed trunk at each budget,
// and requires byte-identical logits. Returns how many budgets streamed the
// head in more than one block.
int check_identity(const std::string& model, const std::vector<int32_t>& prompt, const std::vector<Budget>& budgets) {
  const ModelConfig c = load_model_config(model);
  const Checkpoint ck = Checkpoint::open(model);
  const fs::path trunk = fresh_dir("head-trunk");
  pack_trunk(ck, expected_tensors(c), trunk.string(), PackOptions{});
  ResidentWeights resident(c, ck, nullptr);
  const std::vector<float> want = run(c, resident, prompt, 3, 2);
  const uint64_t slot = ExpertIndex(c, ck).slot_bytes();
  int multi = 0;
  for (const Budget& b : budgets) {
    TrunkLayout layout = open_trunk_layout(trunk.string(), ck);
    RunRequest req;
    req.trunk_budget = b.trunk;
    req.cache_budget = b.cache;
    req.head_block_bytes = b.head_block;
    req.context = 64;
    const MemoryPlan plan = plan_memory(c, layout, slot, req);
    if (plan.head_streamed) {
      uint64_t largest_layer = 0;
      for (int sec : plan.streamed)
        if (layout.sections[sec].layer >= 0) largest_layer = std::max(largest_layer, layout.sections[sec].length);
      EXPECT_EQ(plan.stream_buffer_size, std::max(largest_layer, plan.head_block_read_bytes));
      if (plan.head_blocks > 1) {
        EXPECT_LT(plan.head_block_read_bytes, layout.section("head")->length);
      }
      EXPECT_EQ(plan.head_blocks, (c.vocab_size + plan.head_block_rows - 1) / plan.head_block_rows);
      if (plan.head_blocks > 1) ++multi;
    }
    // As planned with 1 and 2 threads, then with the read-ahead depth forced
    // to 2 and 3 buffers.
    for (int variant = 0; variant < 4; ++variant) {
      MemoryPlan p = plan;
      const int threads = variant == 1 ? 1 : 2;
      if (variant >= 2) {
        if (p.streamed.empty()) continue;
        p.stream_buffers = variant;
        p.stream_buffer_bytes = p.stream_buffers * p.stream_buffer_size;
      }
      StreamingWeights w(c, ck, trunk.string(), layout, p, 3);
      const std::vector<float> got = run(c, w, prompt, 3, threads);
      EXPECT_EQ(got.size(), want.size());
      if (got.size() != want.size()) continue;
      EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
          << model << ": logits differ with trunk budget " << b.trunk << ", cache " << b.cache << ", head block "
          << b.head_block << " (" << p.head_blocks << " blocks of " << p.head_block_rows << " rows), "
          << p.stream_buffers << " stream buffers, " << threads << " threads";
    }
  }
  fs::remove_all(trunk);
  return multi;
}

}  // namespace

TEST(HeadBlocks, LayoutFromTheManifestIsThePackedLayout) {
  const ModelConfig c = load_model_config(kTiny);
  const Checkpoint ck = Checkpoint::open(kTiny);
  const TrunkLayout a = plan_trunk(expected_tensors(c), ck), b = layout_trunk(expected_tensors(c));
  ASSERT_EQ(a.sections.size(), b.sections.size());
  EXPECT_EQ(a.file_size, b.file_size);
  for (size_t s = 0; s < a.sections.size(); ++s) {
    EXPECT_EQ(a.sections[s].name, b.sections[s].name);
    EXPECT_EQ(a.sections[s].offset, b.sections[s].offset);
    EXPECT_EQ(a.sections[s].length, b.sections[s].length);
    ASSERT_EQ(a.sections[s].tensors.size(), b.sections[s].tensors.size());
    for (size_t t = 0; t < a.sections[s].tensors.size(); ++t) {
      EXPECT_EQ(a.sections[s].tensors[t].offset, b.sections[s].tensors[t].offset);
      EXPECT_EQ(a.sections[s].tensors[t].nbytes, b.sections[s].tensors[t].nbytes);
    }
  }
  // The config-only plan agrees with the plan made from the checkpoint.
  RunRequest req;
  req.trunk_budget = a.layer_bytes() / 2;
  const MemoryPlan x = plan_memory(c, a, ExpertIndex(c, ck).slot_bytes(), req), y = plan_memory_for_config(c, req);
  EXPECT_EQ(x.pinned, y.pinned);
  EXPECT_EQ(x.stream_buffer_bytes, y.stream_buffer_bytes);
  EXPECT_EQ(x.head_block_rows, y.head_block_rows);
  // Slots: one read per expert from the config, ExpertIndex's reads of the
  // fixture's (not adjacent) tensors: within a few pages.
  EXPECT_LE(y.slot_bytes, x.slot_bytes + 3 * 4096);
  EXPECT_LE(x.slot_bytes, y.slot_bytes + 3 * 4096);
}

TEST(HeadBlocks, TinyLogitsIdenticalForEveryBlockSize) {
  const ModelConfig c = load_model_config(kTiny);
  const uint64_t head = static_cast<uint64_t>(c.vocab_size) * c.hidden_size * 2;
  const uint64_t layers = layout_trunk(expected_tensors(c)).layer_bytes();
  std::vector<int32_t> prompt;
  for (int i = 0; i < 9; ++i) prompt.push_back(1 + 37 * i);
  const int multi = check_identity(kTiny, prompt,
                                   {
                                       {0, 0, 0},                    // everything streams, automatic blocks
                                       {0, 0, 4096},                 // the smallest block: 32 rows
                                       {0, 0, 3 * 4096 + 100},       // 96 rows, last block partial
                                       {0, 0, head * 4},             // one block
                                       {layers, 1 << 20, 0},         // layers pinned, only the head streams
                                       {layers / 2, 0, 5 * 4096},    // part pinned
                                       {layers + head, 1 << 30, 0},  // everything pinned
                                   });
  EXPECT_GE(multi, 4);
}

TEST(HeadBlocks, GeneratedCheckpointLogitsIdentical) {
  const SynthGeometry g = k3::test::small_streaming_geometry(6, 32);
  const fs::path dir = fresh_dir("head-gen");
  SynthOptions opt;
  opt.seed = 11;
  write_synthetic_checkpoint(dir.string(), g, opt);
  const uint64_t layers = layout_trunk(expected_tensors(load_model_config(dir.string()))).layer_bytes();
  const int multi = check_identity(dir.string(), {5, 17, 300, 42, 1999, 7, 100},
                                   {{0, 0, 0}, {0, 0, 64 * 1024}, {0, 0, 300 * 1024}, {layers, 1 << 20, 4096}});
  EXPECT_GE(multi, 3);
  fs::remove_all(dir);
}

// K3's real geometry, planned from the config alone.
TEST(HeadBlocks, K3WholeLayerPlanOf3And1GBFitsIn8GiB) {
  const ModelConfig c = k3::test::k3_synth_config("head-k3cfg");
  auto plan_for = [&](const Preset& p, uint64_t context, uint64_t batch, TrunkLayout* layout) {
    RunRequest req;
    req.trunk_budget = static_cast<uint64_t>(p.trunk_gb * 1e9);
    req.cache_budget = static_cast<uint64_t>(p.cache_gb * 1e9);
    req.context = context;
    req.batch = batch;
    req.tensor_count = 497056;
    return plan_memory_for_config(c, req, layout);
  };
  TrunkLayout layout;
  // 3 GB of trunk and 1 GB of cache streamed in whole layers (the laptop
  // preset now streams in row blocks, preset_fit_test).
  const Preset whole_layers{"3+1 GB", 3.0, 1.0, "", {"8 GB", 7.7, 5.0}};
  const MemoryPlan laptop = plan_for(whole_layers, 4096, 256, &layout);
  std::printf("K3 3+1 GB whole-layer plan (4096 positions, prefill batch 256):\n%s\n",
              laptop.describe(layout, c, RunRequest{}).c_str());
  const uint64_t head = layout.section("head")->length;
  uint64_t largest_layer = 0;
  for (const TrunkSection& s : layout.sections)
    if (s.layer >= 0) largest_layer = std::max(largest_layer, s.length);
  EXPECT_NEAR(head / 1e9, 2.35, 0.01);  // 163840 x 7168 BF16
  ASSERT_TRUE(laptop.head_streamed);
  EXPECT_GE(laptop.head_blocks, 2u);
  EXPECT_LE(laptop.stream_buffer_size, largest_layer);  // sized by a layer, not by the head
  EXPECT_EQ(laptop.stream_buffers, 2);                  // 1.27 GB layers: no room to read further ahead in 3 GB
  EXPECT_EQ(laptop.stream_buffer_bytes, laptop.stream_buffer_size * laptop.stream_buffers);
  EXPECT_EQ(laptop.peak_rss, laptop.pinned_bytes + laptop.stream_buffer_bytes + laptop.head_small_bytes +
                                 laptop.cache_bytes + laptop.kda_state_bytes + laptop.mla_cache_bytes +
                                 laptop.activation_bytes + laptop.io_bytes);
  EXPECT_LT(laptop.peak_rss, 8ull << 30);        // 8 GiB
  EXPECT_LE(laptop.peak_rss, 8'200'000'000ull);  // the published engine's figure
  // A short prompt (5 ids, 3 generated) needs less still.
  const MemoryPlan short_prompt = plan_for(whole_layers, 8, 5, nullptr);
  EXPECT_LT(short_prompt.peak_rss, laptop.peak_rss);
  std::printf("K3 3+1 GB whole-layer forecast: %.2f GB (4096 positions, batch 256), %.2f GB (5 ids + 3 generated)\n",
              laptop.peak_rss / 1e9, short_prompt.peak_rss / 1e9);
  // No preset forecasts more than the published engine's table.
  const std::vector<std::pair<std::string, double>> published = {
      {"desktop", 31.9}, {"workstation", 95.5}, {"server", 128}, {"max", 224}};
  for (const auto& [name, gb] : published) {
    const MemoryPlan p = plan_for(*find_preset(name), 4096, 256, nullptr);
    EXPECT_LE(p.peak_rss / 1e9, gb) << name;
    EXPECT_LE(p.stream_buffer_size, largest_layer) << name;
  }
}

// The generator's K3 config has the weights of the reference config the
// forecasts in k3-doctor use.
TEST(HeadBlocks, SynthK3GeometryHasTheReferenceWeights) {
  RunRequest req;
  req.trunk_budget = 3'000'000'000;
  req.cache_budget = 1'000'000'000;
  const MemoryPlan a = plan_memory_for_config(k3::test::k3_synth_config("head-k3cfg"), req),
                   b = plan_memory_for_config(k3_reference_config(), req);
  EXPECT_EQ(a.pinned, b.pinned);
  EXPECT_EQ(a.pinned_bytes, b.pinned_bytes);
  EXPECT_EQ(a.stream_buffer_bytes, b.stream_buffer_bytes);
  EXPECT_EQ(a.head_block_rows, b.head_block_rows);
  EXPECT_EQ(a.slot_bytes, b.slot_bytes);
  EXPECT_EQ(a.kda_state_bytes, b.kda_state_bytes);
  EXPECT_EQ(a.mla_cache_bytes, b.mla_cache_bytes);
}
