// Trunk matrices streamed in row blocks: logits are byte-identical to the
// resident run at every block size down to the smallest (one row of the
// widest matrix), with 1 and 2 threads, on the tiny fixture and on a
// generated checkpoint; the stream reads units in the order the forward pass
// uses them (nothing is read only when asked for, once running); a block
// below one row is refused; and K3's real geometry plans the `min` preset
// under 4.0 GB at 4096 positions with every component at its floor.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint.h"
#include "common/error.h"
#include "common/thread_pool.h"
#include "expert_cache/expert_index.h"
#include "lib/synth_models.h"
#include "lib/test_util.h"
#include "model/config.h"
#include "model/forward_pass.h"
#include "model/tensor_manifest.h"
#include "planning/memory_plan.h"
#include "planning/preset_plan.h"
#include "planning/presets.h"
#include "runtime/resident_weights.h"
#include "runtime/streaming_weights.h"
#include "synth/synth_checkpoint.h"
#include "synth/synth_geometry.h"
#include "trunk/row_blocks.h"
#include "trunk/writer.h"

namespace fs = std::filesystem;
using namespace k3;

using k3::test::fresh_dir;
namespace {

const std::string kTiny = std::string(K3_TEST_DATA) + "/k3-tiny";

// Logits of a prefill over `prompt` in batches of `batch` (every row), then
// `decode` greedy steps (last row), concatenated.
std::vector<float> run(const ModelConfig& c, WeightSource& w, const std::vector<int32_t>& prompt, int decode,
                       int threads, size_t batch, StreamingWeights* streaming = nullptr,
                       uint64_t* decode_not_ahead = nullptr) {
  ThreadPool pool(threads);
  ForwardPass engine(c, w, pool);
  engine.set_max_batch(batch);
  SequenceState state;
  engine.reset(state);
  const size_t vocab = c.vocab_size;
  std::vector<float> all(prompt.size() * vocab);
  engine.forward(state, prompt, LogitRows::kAll, all.data());
  std::vector<float> last(all.end() - vocab, all.end());
  const uint64_t before = streaming ? streaming->stats().units_not_ahead : 0;
  for (int s = 0; s < decode; ++s) {
    int32_t id = 0;
    for (size_t v = 1; v < vocab; ++v)
      if (last[v] > last[id]) id = static_cast<int32_t>(v);
    engine.forward(state, std::vector<int32_t>{id}, LogitRows::kLast, last.data());
    all.insert(all.end(), last.begin(), last.end());
  }
  if (decode_not_ahead) *decode_not_ahead = streaming->stats().units_not_ahead - before;
  return all;
}

// Runs the model resident, then streaming from a packed trunk with each block
// budget (the smallest with half the layers pinned), 1 and 2 threads, and
// requires byte-identical logits. Returns the smallest block tested.
uint64_t check_identity(const std::string& model, const std::vector<int32_t>& prompt,
                        const std::vector<uint64_t>& extra_blocks) {
  const ModelConfig c = load_model_config(model);
  const Checkpoint ck = Checkpoint::open(model);
  const fs::path trunk = fresh_dir("rows-trunk");
  pack_trunk(ck, expected_tensors(c), trunk.string(), PackOptions{});
  ResidentWeights resident(c, ck, nullptr);
  const std::vector<float> want = run(c, resident, prompt, 3, 2, 256);
  const uint64_t slot = ExpertIndex(c, ck).slot_bytes();
  const uint64_t floor = min_block_bytes(c), half = layout_trunk(expected_tensors(c)).layer_bytes() / 2;
  // The smallest blocks (thousands of reads per token) with half the layers
  // pinned, larger ones with everything streamed.
  std::vector<std::pair<uint64_t, uint64_t>> cases = {
      {floor, half}, {floor + 1, half}, {3 * floor + 5, 0}, {4096, 0}, {64 * 1024, 0}};
  for (uint64_t b : extra_blocks) cases.emplace_back(b, 0);
  for (const auto& [block, trunk_budget] : cases) {
    {
      TrunkLayout layout = open_trunk_layout(trunk.string(), ck);
      RunRequest req;
      req.trunk_budget = trunk_budget;
      req.cache_budget = 0;
      req.block_bytes = block;
      req.context = 64;
      const MemoryPlan plan = plan_memory(c, layout, slot, req);
      EXPECT_FALSE(plan.streamed.empty());
      EXPECT_GE(plan.stream_buffers, 3);
      EXPECT_EQ(plan.cache_slots, static_cast<uint64_t>(c.num_experts_per_token));
      // Buffers: the largest held part or block, never a whole layer when
      // a layer is larger than both.
      uint64_t largest_held = 0, largest_block = 0;
      for (int s : plan.streamed) {
        if (layout.sections[s].layer < 0) continue;
        const LayerRowBlocks rb = layer_row_blocks(c, layout.sections[s], block);
        largest_held = std::max(largest_held, rb.held_bytes);
        largest_block = std::max(largest_block, rb.largest_block_bytes);
        for (const StreamedMatrix& m : rb.matrices) EXPECT_LE(m.block_rows * m.row_bytes, block) << m.shape.name;
      }
      EXPECT_EQ(plan.held_bytes, largest_held);
      // A row block's first read takes its whole trunk blocks (to check
      // their hashes): up to one more 256 KiB block at each end.
      EXPECT_EQ(plan.stream_buffer_size,
                std::max({largest_held, largest_block + 2 * layout.block_bytes, plan.head_block_read_bytes}));
      for (int threads : {1, 2}) {
        StreamingWeights w(c, ck, trunk.string(), layout, plan, 3);
        uint64_t not_ahead = 0;
        const std::vector<float> got = run(c, w, prompt, 3, threads, threads == 1 ? 256 : 3, &w, &not_ahead);
        EXPECT_EQ(got.size(), want.size());
        if (got.size() != want.size()) continue;
        EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
            << model << ": logits differ with blocks of " << block << " bytes (" << plan.row_blocks
            << " per token), trunk budget " << trunk_budget << ", " << threads << " threads";
        // Units come in use order: while decoding every one was read ahead.
        EXPECT_EQ(not_ahead, 0u) << model << ": blocks of " << block << " bytes read out of use order";
      }
    }
  }
  fs::remove_all(trunk);
  return floor;
}

}  // namespace

TEST(RowBlocks, TinyLogitsIdenticalAtEveryBlockSize) {
  const uint64_t floor = check_identity(kTiny, {1, 38, 75, 112, 149, 186, 223, 260, 297}, {});
  // The tiny fixture's widest streamed matrix is the dense layer's down_proj
  // (intermediate_size 160 BF16 columns).
  EXPECT_EQ(floor, 320u);
}

TEST(RowBlocks, GeneratedCheckpointLogitsIdentical) {
  const SynthGeometry g = k3::test::small_streaming_geometry(5, 16);
  const fs::path dir = fresh_dir("rows-gen");
  SynthOptions opt;
  opt.seed = 5;
  write_synthetic_checkpoint(dir.string(), g, opt);
  const uint64_t floor = check_identity(dir.string(), {5, 17, 300, 42, 1999, 7}, {200 * 1024});
  EXPECT_EQ(floor, 1024u);  // one row of down_proj: 512 BF16 columns
  fs::remove_all(dir);
}

TEST(RowBlocks, ABlockBelowOneRowIsRefused) {
  const ModelConfig c = load_model_config(kTiny);
  const Checkpoint ck = Checkpoint::open(kTiny);
  const TrunkLayout layout = plan_trunk(expected_tensors(c), ck);
  RunRequest req;
  req.block_bytes = min_block_bytes(c) - 1;
  try {
    plan_memory(c, layout, ExpertIndex(c, ck).slot_bytes(), req);
    ADD_FAILURE() << "a block below one row was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    EXPECT_NE(std::string(e.what()).find("mlp.down_proj"), std::string::npos) << e.what();
  }
  req.block_bytes = min_block_bytes(c);
  EXPECT_NO_THROW(plan_memory(c, layout, ExpertIndex(c, ck).slot_bytes(), req));
}

// K3's real geometry, planned from the config alone as k3-doctor and
// --list-presets do.
TEST(RowBlocks, K3MinPresetPlansUnder4GB) {
  const ModelConfig c = k3::test::k3_synth_config("rows-k3cfg");
  std::string widest;
  EXPECT_EQ(min_block_bytes(c, &widest), 33792u * 2);  // dense layer's down_proj row
  EXPECT_NE(widest.find("layers.0.mlp.down_proj"), std::string::npos) << widest;
  const PlanModel model = plan_model_for_config(c);
  const Preset& min = *find_preset("min");
  const MemoryPlan p = plan_preset(min, model);
  const RunRequest req = preset_plan_request(min, model);
  std::printf("K3 min plan (4096 positions):\n%s\n", p.describe(model.layout, c, req).c_str());
  EXPECT_EQ(req.context, 4096u);
  EXPECT_LE(p.peak_rss, 4'000'000'000ull);
  // Every component at its floor: nothing pinned, buffers of a block (or the
  // largest held part), the expert arena one layer's top-k, the batch the
  // preset's.
  EXPECT_EQ(p.pinned_bytes, 0u);
  EXPECT_EQ(p.cache_slots, static_cast<uint64_t>(c.num_experts_per_token));
  EXPECT_EQ(p.cache_slots, p.min_slots);
  EXPECT_EQ(p.batch, kMinPresetBatch);
  EXPECT_LE(p.stream_buffer_size, std::max<uint64_t>(p.held_bytes, p.block_bytes + 8192 + 2 * (256u << 10)));
  EXPECT_LE(p.held_bytes, 40'000'000u);  // MLA's kv_b_proj (25 MB) and the norms
  EXPECT_EQ(p.peak_rss, p.pinned_bytes + p.stream_buffer_bytes + p.head_small_bytes + p.cache_bytes +
                            p.kda_state_bytes + p.mla_cache_bytes + p.activation_bytes + p.io_bytes);
  // The whole-layer desktop plan needs buffers the size of a MoE layer (the
  // dense layer 0 is pinned).
  const MemoryPlan desktop = plan_preset(*find_preset("desktop"), model);
  EXPECT_EQ(find_preset("desktop")->block_mb, 0);
  EXPECT_GT(desktop.stream_buffer_size, 1'000'000'000u);
  EXPECT_LT(p.stream_buffer_bytes * 10, desktop.stream_buffer_bytes);
  // The smallest block works at K3 geometry too: one row of 67,584 bytes.
  RunRequest floor_req = req;
  floor_req.block_bytes = min_block_bytes(c);
  const MemoryPlan f = plan_memory(c, model.layout, model.slot_bytes, floor_req);
  EXPECT_LT(f.peak_rss, p.peak_rss);
  std::printf("K3 forecasts: min %.2f GB (blocks of %.1f MB), at the smallest block %.2f GB, desktop %.2f GB\n",
              p.peak_rss / 1e9, p.block_bytes / 1e6, f.peak_rss / 1e9, desktop.peak_rss / 1e9);
}
