// fit_prefill_chunk (planning/prefill_chunk_fit.h) against a brute force over
// every batch (halved down to one token), chunk (the prompt halved down to a
// batch), spill choice, lending of the expert cache, sub-batch (the chunk
// halved down to a batch) and hold (none, every layer, each smaller layer
// size as the hold limit) at K3's geometry, the rule computed here on its
// own: at each batch the fewest disk bytes of a plan that fits (the weights
// read, the spill file written and read back, the lent cache's refill), and
// of those the largest batch's within 1 + kBatchBytesSlack of the fewest;
// where nothing fits, the chunk is one batch; plans that skip layers over a
// hold limit only where no plan holding every layer fits. The slack's boundary on
// hand-made plans; one plan_of call per candidate. The memory plan counts a
// sub-batch's scratch beyond a batch's in the chunk
// (prefill_sub_batch_scratch_bytes) and takes it only where the trunk
// streams in row blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "model/forward_scratch.h"
#include "model/k3_geometry.h"
#include "model/kda.h"
#include "model/latent_moe_chunk.h"
#include "model/mla.h"
#include "model/prefill_chunk.h"
#include "model/situ_mlp_chunk.h"
#include "planning/first_token_forecast.h"
#include "planning/memory_plan.h"
#include "planning/prefill_chunk_fit.h"
#include "planning/prefill_forecast.h"
#include "planning/preset_plan.h"
#include "planning/presets.h"
#include "planning/row_block_tables.h"

namespace k3 {
namespace {

constexpr uint64_t kTokens = 8192;

const PlanModel& k3_model() {
  static const PlanModel m = plan_model_for_config(k3_reference_config());
  return m;
}

RunRequest request_for(const Preset& preset) {
  RunRequest run;
  run.context = kTokens;
  RunRequest r = preset_plan_request(preset, k3_model(), run);
  r.chunk = kTokens;
  return r;
}

// Each preset's row-block tables built once (planning/row_block_tables.h;
// row_block_tables_test checks they give the plan made without them).
MemoryPlan plan_of(const RunRequest& r) {
  const PlanModel& m = k3_model();
  static std::map<uint64_t, RowBlockTables> tables;
  auto it = tables.find(r.block_bytes);
  if (it == tables.end()) it = tables.emplace(r.block_bytes, row_block_tables(m.config, m.layout, r.block_bytes)).first;
  return plan_memory(m.config, m.layout, m.slot_bytes, r, &it->second);
}

// What the search weighs, written out: the weights' bytes, the spill
// file's and the lent state's bytes written and read back, and the lent
// cache's refill.
double bytes_of(const MemoryPlan& p) {
  const PrefillReads r = forecast_prefill_reads(k3_model().config, p, kTokens);
  return r.trunk_bytes + r.expert_bytes + r.spill_written_bytes + r.spill_read_bytes + r.state_written_bytes +
         r.state_read_bytes + static_cast<double>(p.cache_lent_bytes) + static_cast<double>(p.pinned_lent_read_bytes);
}

// The rule over every batch (the request's halved down to one), chunk,
// spill choice, lending and sub-batch: the fewest bytes of a plan that fits
// at each batch, then the largest batch within the slack of the fewest of
// all. {0, infinity} where none fits.
struct Expected {
  uint64_t batch = 0;
  double bytes = std::numeric_limits<double>::infinity();
};

// The hold limits a brute force tries: not held (kNotHeld), every layer held
// (0), then each layer section size below the largest, written out from the
// layout.
constexpr uint64_t kNotHeld = std::numeric_limits<uint64_t>::max();
std::vector<uint64_t> hold_limits() {
  std::set<uint64_t, std::greater<>> sizes;
  for (const TrunkSection& ts : k3_model().layout.sections)
    if (ts.layer >= 0) sizes.insert(ts.length);
  std::vector<uint64_t> limits{kNotHeld, 0};
  limits.insert(limits.end(), std::next(sizes.begin()), sizes.end());
  return limits;
}

Expected brute_force(const RunRequest& base, const PlanFits& fits) {
  std::map<uint64_t, double, std::greater<>> fewest_at;   // batch -> its fewest bytes
  std::map<uint64_t, double, std::greater<>> limited_at;  // the same of the plans that skip layers
  bool holds_all = false;                                 // a plan holding every layer fits at some batch
  for (uint64_t batch = plan_of(base).batch;; batch /= 2) {
    for (uint64_t chunk = kTokens;; chunk = std::max(batch, chunk / 2)) {
      for (bool spill : {false, true})
        for (bool lend : {false, true})
          for (uint64_t limit : hold_limits())  // kNotHeld: not held; 0: every layer held
            for (uint64_t sub = chunk;; sub = std::max(batch, sub / 2)) {
              const bool hold = limit != kNotHeld;
              RunRequest r = base;
              r.batch = batch;
              r.chunk = chunk;
              r.spill_chunk = spill;
              r.lend_cache = lend;
              r.hold_layer = hold;
              r.hold_limit = hold ? limit : 0;
              r.chunk_sub_batch = sub;
              const MemoryPlan p = plan_of(r);
              // The same plan with the sequence state lent, where it does not
              // fit without (where it does, lending only adds the file's
              // bytes: checked below).
              r.lend_state = true;
              const MemoryPlan q = fits(p) ? p : plan_of(r);
              if (fits(p) && p.chunk > p.batch) {
                EXPECT_GT(bytes_of(plan_of(r)), bytes_of(p)) << "batch " << batch << ", chunk " << chunk;
              }
              for (const MemoryPlan* each : {&p, &q})
                if (fits(*each)) {
                  auto& at = each->skipped_layers > 0 ? limited_at : fewest_at;
                  auto [it, fresh] = at.emplace(batch, bytes_of(*each));
                  if (!fresh) it->second = std::min(it->second, bytes_of(*each));
                  holds_all = holds_all || (each->layer_held && each->skipped_layers == 0);
                }
              // Without row blocks the plan takes no sub-batch; held, its own.
              if (sub == batch || p.row_blocks == 0 || hold) break;
            }
      if (chunk == batch) break;
    }
    if (batch == 1) break;
  }
  // Plans that skip layers compete only where no plan holds every layer.
  if (!holds_all)
    for (const auto& [batch, bytes] : limited_at) {
      auto [it, fresh] = fewest_at.emplace(batch, bytes);
      if (!fresh) it->second = std::min(it->second, bytes);
    }
  Expected e;
  double fewest = std::numeric_limits<double>::infinity();
  for (const auto& [batch, bytes] : fewest_at) fewest = std::min(fewest, bytes);
  for (const auto& [batch, bytes] : fewest_at)  // the largest batch first
    if (bytes <= fewest * (1 + kBatchBytesSlack)) return Expected{batch, bytes};
  return e;
}

TEST(PrefillChunkFit, TheRuleOverEveryPlanThatFits) {
  // Each on its machine class (the brute force over every batch takes up to
  // a second a case; where nothing fits: first_token_forecast_test); and
  // min on 1.8 GB available, where no held plan fits and a row-block plan's
  // sub-batch is halved until one fits.
  const std::pair<const char*, uint64_t> cases[] = {
      {"min", 0}, {"laptop", 0}, {"desktop", 0}, {"workstation", 0}, {"min", 1'800'000'000}};
  for (const auto& [name, smaller] : cases) {
    const Preset& preset = *find_preset(name);
    const uint64_t available = smaller ? smaller : preset.machine.available_bytes();
    const auto fits = [&](const MemoryPlan& p) { return plan_fits(p, available); };
    const std::string what = std::string(name) + " on " + std::to_string(available) + " bytes available";
    const RunRequest base = request_for(preset);
    const Expected want = brute_force(base, fits);
    RunRequest req = base;
    const MemoryPlan got = fit_prefill_chunk(k3_model().config, plan_of, fits, req, kTokens, true);
    if (std::isinf(want.bytes)) {
      EXPECT_FALSE(fits(got)) << what;
      EXPECT_EQ(got.chunk, got.batch) << what;
      continue;
    }
    EXPECT_TRUE(fits(got)) << what;
    EXPECT_EQ(got.batch, want.batch) << what;
    EXPECT_DOUBLE_EQ(bytes_of(got), want.bytes) << what;
    EXPECT_DOUBLE_EQ(prefill_disk_bytes(k3_model().config, got, kTokens), bytes_of(got)) << what;
    // The request it leaves is the plan's.
    EXPECT_EQ(plan_of(req).peak_rss, got.peak_rss) << what;
    EXPECT_EQ(req.chunk, got.chunk) << what;
    EXPECT_EQ(req.batch, got.batch) << what;
  }
}

// Hand-made plans: `trunk` bytes streamed at each batch, nothing else read
// (no experts, the embedding pinned); lending the cache lends `lent` bytes.
PlanOf hand_made(const std::map<uint64_t, uint64_t>& trunk, uint64_t lent) {
  return [&trunk, lent](const RunRequest& r) {
    MemoryPlan p;
    p.batch = std::max<uint64_t>(1, r.batch);
    p.chunk = std::max(p.batch, r.chunk);
    p.chunk_spilled = r.spill_chunk && p.chunk > p.batch;
    p.chunk_sub_batch = p.batch;
    p.embedding_pinned = true;
    p.streamed_read_bytes = trunk.at(p.batch);
    p.cache_lent_bytes = r.lend_cache && p.chunk > p.batch ? lent : 0;
    return p;
  };
}

// At every batch only chunks below the prompt fit (so the search goes down
// to one token), the best a chunk of half the prompt in memory, which reads
// the trunk twice: 2 x the batch's trunk bytes. A smaller batch is taken
// only where it saves more than the slack.
TEST(PrefillChunkFit, SmallerBatchOnlyBeyondTheSlack) {
  const ModelConfig c = k3_model().config;
  constexpr uint64_t kPrompt = 4096;
  std::map<uint64_t, uint64_t> trunk;  // batch -> streamed trunk bytes
  const PlanOf fake = hand_made(trunk, 0);
  const PlanFits below_prompt = [&](const MemoryPlan& p) { return p.chunk < kPrompt; };
  const auto chosen_batch = [&] {
    RunRequest req;
    req.batch = 8;
    req.chunk = kPrompt;
    const MemoryPlan got = fit_prefill_chunk(c, fake, below_prompt, req, kPrompt, false);
    EXPECT_EQ(got.chunk, kPrompt / 2);
    EXPECT_EQ(prefill_disk_bytes(c, got, kPrompt), 2.0 * static_cast<double>(trunk.at(got.batch)));
    return got.batch;
  };
  // 1,700 = 1,600 x (1 + 1/16): batch 8 is within the slack of batch 1's
  // fewest, so it is kept.
  ASSERT_EQ(kBatchBytesSlack, 1.0 / 16);
  trunk = {{8, 1700}, {4, 1650}, {2, 1600}, {1, 1600}};
  EXPECT_EQ(chosen_batch(), 8u);
  // One byte more: batch 4, the largest within the slack.
  trunk[8] = 1701;
  EXPECT_EQ(chosen_batch(), 4u);
  // Only the fewest within it: the larger of the two batches that read it.
  trunk = {{8, 1800}, {4, 1750}, {2, 1600}, {1, 1600}};
  EXPECT_EQ(chosen_batch(), 2u);
  // Fewer bytes at a larger batch win outright.
  trunk = {{8, 800}, {4, 1600}, {2, 900}, {1, 820}};
  EXPECT_EQ(chosen_batch(), 8u);
}

// The whole prompt fits at batch 8 only by lending the cache, at batch 4
// without: the lent bytes' refill (half the trunk's) is more than the
// slack, so a plan that lends does not end the search, and batch 4 wins.
TEST(PrefillChunkFit, LendingDoesNotEndTheSearch) {
  const ModelConfig c = k3_model().config;
  constexpr uint64_t kPrompt = 4096;
  const std::map<uint64_t, uint64_t> trunk = {{8, 1000}, {4, 1000}, {2, 1000}, {1, 1000}};
  const PlanFits fits = [&](const MemoryPlan& p) {
    return p.chunk < kPrompt || p.cache_lent_bytes > 0 || p.batch <= 4;
  };
  RunRequest req;
  req.batch = 8;
  req.chunk = kPrompt;
  const MemoryPlan got = fit_prefill_chunk(c, hand_made(trunk, 500), fits, req, kPrompt, false);
  EXPECT_EQ(got.batch, 4u);
  EXPECT_EQ(got.chunk, kPrompt);
  EXPECT_EQ(got.cache_lent_bytes, 0u);
  EXPECT_FALSE(req.lend_cache);
  // A refill within the slack: batch 8, lending.
  RunRequest req2;
  req2.batch = 8;
  req2.chunk = kPrompt;
  const MemoryPlan small = fit_prefill_chunk(c, hand_made(trunk, 50), fits, req2, kPrompt, false);
  EXPECT_EQ(small.batch, 8u);
  EXPECT_EQ(small.cache_lent_bytes, 50u);
  EXPECT_TRUE(req2.lend_cache);
}

// A search makes each candidate's plan once: no plan twice, the batch's
// own (its first candidate's) included.
TEST(PrefillChunkFit, OnePlanPerCandidate) {
  for (const char* name : {"min", "laptop", "workstation"}) {
    const Preset& preset = *find_preset(name);
    const uint64_t available = preset.machine.available_bytes();
    std::set<std::tuple<uint64_t, uint64_t, bool, bool, uint64_t, bool, uint64_t, bool>> seen;
    int calls = 0;
    const PlanOf counted = [&](const RunRequest& r) {
      const MemoryPlan p = plan_of(r);
      ++calls;
      EXPECT_TRUE(seen.emplace(p.batch, p.chunk, p.chunk_spilled, r.lend_cache, p.chunk_sub_batch, p.layer_held,
                               p.hold_limit, r.lend_state)
                      .second)
          << name << ": the plan of batch " << p.batch << ", chunk " << p.chunk << ", sub-batch " << p.chunk_sub_batch
          << (p.chunk_spilled ? ", spilled" : "") << (r.lend_cache ? ", lending" : "") << (p.layer_held ? ", held" : "")
          << ", hold limit " << p.hold_limit << (r.lend_state ? ", the state lent" : "") << " made twice";
      return p;
    };
    RunRequest req = request_for(preset);
    fit_prefill_chunk(
        k3_model().config, counted, [&](const MemoryPlan& p) { return plan_fits(p, available); }, req, kTokens, true);
    EXPECT_GT(calls, 0) << name;
  }
}

// Workstation at 8,192 tokens: spilling the chunk's block states writes and
// reads back 98 GB, lending the expert cache costs its 3.7 GB of refill,
// lending the sequence state 2.8 GB of its file written and read back; with
// the spill file counted the search lends (the state, the fewest bytes).
TEST(PrefillChunkFit, SpillFileCountedAgainstLending) {
  const Preset& ws = *find_preset("workstation");
  const uint64_t available = ws.machine.available_bytes();
  const auto fits = [&](const MemoryPlan& p) { return plan_fits(p, available); };
  RunRequest req = request_for(ws);
  const MemoryPlan got = fit_prefill_chunk(k3_model().config, plan_of, fits, req, kTokens, true);
  ASSERT_TRUE(fits(got));
  EXPECT_EQ(got.chunk, kTokens);
  EXPECT_FALSE(got.chunk_spilled);
  EXPECT_GT(got.state_lent_bytes, 0u);
  EXPECT_EQ(got.cache_lent_bytes, 0u);
  // The spilled plan at the same batch, without lending, fits and reads
  // fewer bytes of weights, but moves more on the disk in all.
  RunRequest spilled = req;
  spilled.spill_chunk = true;
  spilled.lend_cache = false;
  spilled.lend_state = false;
  const MemoryPlan s = plan_of(spilled);
  ASSERT_TRUE(fits(s));
  const PrefillReads sr = forecast_prefill_reads(k3_model().config, s, kTokens),
                     gr = forecast_prefill_reads(k3_model().config, got, kTokens);
  EXPECT_LE(sr.trunk_bytes + sr.expert_bytes, gr.trunk_bytes + gr.expert_bytes);
  EXPECT_GT(bytes_of(s), bytes_of(got));
  // The plan lending the cache instead fits too and moves more.
  RunRequest cache = req;
  cache.lend_state = false;
  cache.lend_cache = true;
  const MemoryPlan c = plan_of(cache);
  ASSERT_TRUE(fits(c));
  EXPECT_GT(bytes_of(c), bytes_of(got));
}

// Laptop at K3's geometry and 8,192 positions on its machine class: no plan
// fits at its batch of 256 (the batch's attention scratch over the context
// alone is over the limit), yet with the batch lowered the chunk holds the
// whole prompt: one read of the weights, not one per batch (32 reads of
// 1.5 TB: 49.3 TB).
TEST(PrefillChunkFit, LoweredBatchKeepsAChunk) {
  const Preset& laptop = *find_preset("laptop");
  const uint64_t available = laptop.machine.available_bytes();
  const auto fits = [&](const MemoryPlan& p) { return plan_fits(p, available); };
  const RunRequest base = request_for(laptop);
  ASSERT_EQ(plan_of(base).batch, 256u);
  RunRequest at_256 = base;
  at_256.chunk = 256;
  EXPECT_FALSE(fits(plan_of(at_256))) << "one batch of 256 rows over 8,192 positions";
  RunRequest req = base;
  const MemoryPlan got = fit_prefill_chunk(k3_model().config, plan_of, fits, req, kTokens, true);
  ASSERT_TRUE(fits(got));
  EXPECT_LT(got.batch, 256u);
  EXPECT_GE(got.chunk, 8 * got.batch);
  EXPECT_EQ(req.batch, got.batch);
  // The whole prompt in one read of the weights (its block states spilled).
  EXPECT_EQ(got.chunk, kTokens);
  EXPECT_EQ(forecast_prefill_reads(k3_model().config, got, kTokens).reads, 1u);
  // The forecast of a prompt at the preset is this search.
  const MemoryPlan forecast = plan_preset_for_prompt(laptop, k3_model(), kTokens, available);
  EXPECT_EQ(forecast.batch, got.batch);
  EXPECT_EQ(forecast.chunk, got.chunk);
  EXPECT_EQ(forecast.peak_rss, got.peak_rss);
}

TEST(PrefillChunkFit, SubBatchScratchCountedWhereRowBlocksStream) {
  const ModelConfig& c = k3_model().config;
  RunRequest r = request_for(*find_preset("min"));
  r.chunk = 2048;
  const MemoryPlan batch = plan_of(r);
  ASSERT_GT(batch.row_blocks, 0u) << "min streams its trunk in row blocks";
  EXPECT_EQ(batch.chunk_sub_batch, batch.batch);
  r.chunk_sub_batch = 512;
  const MemoryPlan sub = plan_of(r);
  EXPECT_EQ(sub.chunk_sub_batch, 512u);
  EXPECT_EQ(sub.chunk_bytes - batch.chunk_bytes, prefill_sub_batch_scratch_bytes(c, 512, kTokens) -
                                                     prefill_sub_batch_scratch_bytes(c, batch.batch, kTokens));
  r.chunk_sub_batch = 1u << 20;  // at most the chunk
  EXPECT_EQ(plan_of(r).chunk_sub_batch, 2048u);
  // Spilled: a sub-batch's rows of every block state are staged.
  r.spill_chunk = true;
  r.chunk_sub_batch = 512;
  const MemoryPlan spilled = plan_of(r);
  EXPECT_EQ(spilled.chunk_bytes, 2048 * prefill_chunk_bytes_per_token(c, true) + prefill_chunk_staging_bytes(c, 512) +
                                     prefill_sub_batch_scratch_bytes(c, 512, kTokens) -
                                     prefill_sub_batch_scratch_bytes(c, batch.batch, kTokens));
  // Whole layers (desktop): a layer is read once per chunk anyway.
  RunRequest d = request_for(*find_preset("desktop"));
  d.chunk = 2048;
  d.chunk_sub_batch = 512;
  const MemoryPlan desktop = plan_of(d);
  EXPECT_EQ(desktop.row_blocks, 0u);
  EXPECT_EQ(desktop.chunk_sub_batch, desktop.batch);
}

// A sub-batch's memory at K3's geometry, written out: x and a [rows, hidden]
// and h for one piece of 256 rows (the stream's p is the chunk's), the
// largest op's area (the dense MLP's without a u of every row), MLA's two
// row indices; spilled, 256 staged rows of each
// of the 8 block states, however long the sub-batch. The spill file's reads:
// layer i's i / 12 + 1 opened blocks once per row for a sub-batch of one
// piece, and for a longer one again, less the block the layer opens.
TEST(PrefillChunkFit, SubBatchBytesFollowTheirFormulas) {
  const ModelConfig& c = k3_model().config;
  ASSERT_EQ(c.hidden_size, 7168);
  ASSERT_EQ(residual_block_count(c), 8u);
  const uint64_t row = 7168 * 4;
  for (uint64_t n : {16u, 128u, 1024u, 8192u}) {
    const uint64_t op = prefill_sub_batch_op_floats(c, n, kTokens, 1) * 4;
    EXPECT_EQ(prefill_sub_batch_scratch_bytes(c, n, kTokens), (2 * n + std::min<uint64_t>(n, 256)) * row + op + 16 * n)
        << n;
    EXPECT_EQ(prefill_chunk_staging_bytes(c, n), std::min<uint64_t>(n, 256) * 8 * row) << n;
    // The op area: the largest op's; the dense MLP's is g [n, 33,792] and
    // one 256-row piece of u.
    const size_t situ = (n + std::min<uint64_t>(n, 256)) * 33792;
    EXPECT_EQ(situ_chunk_scratch_floats(n, 33792, kChunkPieceRows), situ) << n;
    const size_t context = 8192;
    EXPECT_EQ(prefill_sub_batch_op_floats(c, n, kTokens, 1),
              std::max({kda_scratch_floats(c, n, 1), mla_scratch_floats(c, n, context, 1), situ,
                        moe_chunk_scratch_floats(c, n)}))
        << n;
  }
  RunRequest r = request_for(*find_preset("min"));
  r.chunk = 2048;
  r.spill_chunk = true;
  double opened = 0, before = 0;
  for (int i = 0; i < 93; ++i) {
    opened += i / 12 + 1;
    before += i / 12 + (i % 12 == 0 ? 0 : 1);
  }
  for (uint64_t sub : {256u, 512u}) {
    r.chunk_sub_batch = sub;
    const MemoryPlan p = plan_of(r);
    ASSERT_TRUE(p.chunk_spilled);
    ASSERT_EQ(std::max(p.batch, p.chunk_sub_batch), sub);
    const PrefillReads reads = forecast_prefill_reads(c, p, 2048);
    // And each of the 92 MoE layers' shared-expert rows, written and read back once.
    const double moe = c.num_hidden_layers - c.first_k_dense_replace;
    ASSERT_EQ(moe, 92);
    EXPECT_EQ(reads.spill_written_bytes, (8.0 + moe) * 2048 * row);
    EXPECT_EQ(reads.spill_read_bytes, (sub > 256 ? opened + before : opened) * 2048 * row + moe * 2048 * row) << sub;
  }
}

// A held chunk's plan at laptop (one layer pinned, row blocks of 64 MB),
// written out from the layout: the hold buffer is the largest layer
// section (the dense layer 0's 2.34 GB, streamed); the pinned layer 1 is
// lent to it, and the stream buffers but one; the sub-batch is one piece;
// the peak counts the larger of (chunk + hold buffer) and (lent cache +
// lent pinned layer + lent buffers) where the plain plan of the same
// sub-batch counts the chunk and the lent cache's larger and every pinned
// and buffer byte; the forecast
// reads the streamed trunk and the lent layer once per chunk, the block
// states back once per layer; the disk bytes add the re-pin.
TEST(PrefillChunkFit, HeldPlanFollowsItsFormulas) {
  const PlanModel& m = k3_model();
  const ModelConfig& c = m.config;
  RunRequest r = request_for(*find_preset("laptop"));
  r.batch = 8;
  r.spill_chunk = true;
  r.lend_cache = true;
  r.hold_layer = true;
  r.chunk_sub_batch = 4096;  // not taken: a held chunk's sub-batch is one piece
  const MemoryPlan held = plan_of(r);
  ASSERT_TRUE(held.layer_held);
  ASSERT_GT(held.row_blocks, 0u);
  EXPECT_EQ(held.chunk_sub_batch, kChunkPieceRows);
  uint64_t largest = 0, pinned_layers = 0, pinned_stored = 0;
  for (const TrunkSection& ts : m.layout.sections) {
    if (ts.layer < 0) continue;
    largest = std::max(largest, ts.length);
  }
  for (int s : held.pinned)
    if (m.layout.sections[s].layer >= 0) {
      pinned_layers += m.layout.sections[s].length;
      pinned_stored += m.layout.sections[s].stored_length;
    }
  ASSERT_GT(pinned_layers, 1'200'000'000u) << "laptop pins one layer";
  EXPECT_EQ(held.hold_bytes, largest);
  EXPECT_EQ(held.pinned_lent_bytes, pinned_layers);
  EXPECT_EQ(held.pinned_lent_read_bytes, pinned_stored);
  r.hold_layer = false;
  r.chunk_sub_batch = kChunkPieceRows;
  const MemoryPlan plain = plan_of(r);
  ASSERT_FALSE(plain.layer_held);
  EXPECT_EQ(plain.pinned_lent_bytes, 0u);
  EXPECT_EQ(held.chunk_bytes, plain.chunk_bytes);
  EXPECT_EQ(held.cache_lent_bytes, plain.cache_lent_bytes);
  // The stream buffers but one lent too: only head blocks pass while the layers are held.
  ASSERT_GT(held.stream_buffers, 1);
  const uint64_t buffers = (held.stream_buffers - 1) * held.stream_buffer_size;
  EXPECT_EQ(held.buffers_lent_bytes, buffers);
  EXPECT_EQ(plain.buffers_lent_bytes, 0u);
  EXPECT_EQ(held.peak_rss, plain.peak_rss - std::max(plain.chunk_bytes, plain.cache_lent_bytes) - pinned_layers -
                               buffers +
                               std::max(held.chunk_bytes + largest, held.cache_lent_bytes + pinned_layers + buffers));
  const PrefillReads hr = forecast_prefill_reads(c, held, kTokens), pr = forecast_prefill_reads(c, plain, kTokens);
  const double embedding_rows = static_cast<double>(kTokens) * c.hidden_size * 2;
  ASSERT_FALSE(held.embedding_pinned);
  EXPECT_EQ(hr.trunk_bytes,
            static_cast<double>(held.streamed_read_bytes) + static_cast<double>(pinned_stored) + embedding_rows);
  EXPECT_EQ(pr.trunk_bytes, 32.0 * static_cast<double>(plain.streamed_read_bytes) + embedding_rows);
  EXPECT_EQ(hr.spill_read_bytes, pr.spill_read_bytes) << "both one piece: block states read once per layer";
  EXPECT_EQ(prefill_disk_bytes(c, held, kTokens), hr.trunk_bytes + hr.expert_bytes + hr.spill_written_bytes +
                                                      hr.spill_read_bytes + static_cast<double>(held.cache_lent_bytes) +
                                                      static_cast<double>(pinned_stored));
  // Not held where a chunk is one batch, or where whole layers stream.
  r.hold_layer = true;
  r.chunk = r.batch;
  EXPECT_FALSE(plan_of(r).layer_held);
  RunRequest d = request_for(*find_preset("desktop"));
  d.chunk = 2048;
  d.hold_layer = true;
  const MemoryPlan desktop = plan_of(d);
  EXPECT_FALSE(desktop.layer_held);
  EXPECT_EQ(desktop.hold_bytes, 0u);
  EXPECT_EQ(desktop.pinned_lent_bytes, 0u);
}

// A hold limit at K3's geometry (laptop, one layer pinned, batch 8, the
// chunk spilled): the buffer takes the largest layer section at most the
// limit; the streamed layers over it are read once per piece (32 at 8,192
// tokens), the pinned ones over it stay pinned; all written out from the
// layout.
TEST(PrefillChunkFit, HoldLimitFollowsItsFormulas) {
  const PlanModel& m = k3_model();
  const ModelConfig& c = m.config;
  const std::vector<uint64_t> limits = hold_limits();
  ASSERT_GE(limits.size(), 4u) << "K3's layer sections come in three sizes or more";
  RunRequest r = request_for(*find_preset("laptop"));
  r.batch = 8;
  r.spill_chunk = true;
  r.hold_layer = true;
  const MemoryPlan all = plan_of(r);
  ASSERT_TRUE(all.layer_held);
  EXPECT_EQ(all.skipped_layers, 0u);
  EXPECT_EQ(all.hold_next_limit, limits[2]);
  for (size_t i = 2; i < limits.size(); ++i) {
    const uint64_t limit = limits[i];
    r.hold_limit = limit;
    const MemoryPlan p = plan_of(r);
    const std::string what = "limit " + std::to_string(limit);
    ASSERT_TRUE(p.layer_held) << what;
    uint64_t held = 0, skipped = 0, skipped_length = 0, skipped_stored = 0, lent = 0, lent_stored = 0;
    for (int s : p.streamed) {
      const TrunkSection& ts = m.layout.sections[s];
      if (ts.layer < 0) continue;
      if (ts.length <= limit) {
        held = std::max(held, ts.length);
      } else {
        ++skipped;
        skipped_length += ts.length;
        skipped_stored += ts.stored_length;
      }
    }
    for (int s : p.pinned) {
      const TrunkSection& ts = m.layout.sections[s];
      if (ts.layer < 0 || ts.length > limit) continue;
      held = std::max(held, ts.length);
      lent += ts.length;
      lent_stored += ts.stored_length;
    }
    EXPECT_EQ(held, limit) << what << ": a limit that is a layer's size holds that layer";
    EXPECT_EQ(p.hold_limit, limit) << what;
    EXPECT_EQ(p.hold_section_bytes, held) << what;
    ASSERT_GT(skipped, 0u) << what;
    EXPECT_EQ(p.skipped_layers, skipped) << what;
    EXPECT_EQ(p.skipped_bytes, skipped_length) << what;
    EXPECT_EQ(p.skipped_read_bytes, skipped_stored) << what;
    EXPECT_EQ(p.pinned_lent_bytes, lent) << what;
    EXPECT_EQ(p.pinned_lent_read_bytes, lent_stored) << what;
    EXPECT_EQ(p.hold_next_limit, i + 1 < limits.size() ? limits[i + 1] : 0u) << what;
    // The skipped layers' stream buffers take the hold buffer's memory.
    EXPECT_EQ(p.buffers_lent_bytes, (p.stream_buffers - 1) * p.stream_buffer_size) << what;
    EXPECT_EQ(p.hold_bytes, std::max(held, p.buffers_lent_bytes)) << what;
    EXPECT_EQ(p.peak_rss, all.peak_rss -
                              std::max(all.chunk_bytes + all.hold_bytes,
                                       all.cache_lent_bytes + all.pinned_lent_bytes + all.buffers_lent_bytes) -
                              (all.pinned_bytes - all.pinned_lent_bytes) +
                              std::max(p.chunk_bytes + p.hold_bytes, p.cache_lent_bytes + lent + p.buffers_lent_bytes) +
                              (p.pinned_bytes - lent))
        << what;
    // The trunk: each streamed layer once, the skipped ones 31 times more
    // (32 pieces of 256 rows), the lent pinned ones once, the embedding rows.
    ASSERT_EQ(p.chunk_sub_batch, kChunkPieceRows) << what;
    const PrefillReads reads = forecast_prefill_reads(c, p, kTokens);
    const double embedding_rows = static_cast<double>(kTokens) * c.hidden_size * 2;
    EXPECT_EQ(reads.trunk_bytes, static_cast<double>(p.streamed_read_bytes) +
                                     31.0 * static_cast<double>(skipped_stored) + static_cast<double>(lent_stored) +
                                     embedding_rows)
        << what;
  }
  // A limit below every layer holds none: each streamed layer once per piece.
  r.hold_limit = 1;
  const MemoryPlan none = plan_of(r);
  EXPECT_EQ(none.hold_section_bytes, 0u);
  EXPECT_EQ(none.hold_next_limit, 0u);
  EXPECT_EQ(none.pinned_lent_bytes, 0u);
  EXPECT_EQ(none.hold_bytes, none.buffers_lent_bytes) << "the buffer serves the stream buffers alone";
  EXPECT_GT(none.buffers_lent_bytes, 0u);
}

// Where only a held plan at a smaller limit fits (min's machine class
// given just the memory of the held plan at the second layer size, with
// its fixed terms, the cache and the sequence state lent), the search takes
// it: the rule over every plan including each limit (the brute force) and a
// plan that skips layers.
TEST(PrefillChunkFit, SearchTriesSmallerHoldLimits) {
  const Preset& preset = *find_preset("min");
  RunRequest r = request_for(preset);
  r.batch = 16;
  r.spill_chunk = true;
  r.lend_cache = true;
  r.lend_state = true;
  r.hold_layer = true;
  r.hold_limit = hold_limits()[2];
  const MemoryPlan limited = plan_of(r);
  ASSERT_TRUE(limited.layer_held);
  ASSERT_GT(limited.skipped_layers, 0u);
  const auto fits = [&](const MemoryPlan& p) { return p.peak_rss <= limited.peak_rss; };
  r.hold_limit = 0;
  ASSERT_FALSE(fits(plan_of(r))) << "every layer held does not fit";
  RunRequest req = request_for(preset);
  const MemoryPlan got = fit_prefill_chunk(k3_model().config, plan_of, fits, req, kTokens, true);
  ASSERT_TRUE(fits(got));
  EXPECT_TRUE(got.layer_held);
  EXPECT_GT(got.skipped_layers, 0u);
  EXPECT_EQ(req.hold_limit, got.hold_limit);
  EXPECT_DOUBLE_EQ(bytes_of(got), brute_force(request_for(preset), fits).bytes);
}

// The search at K3's geometry, 8,192 tokens, each preset on its machine
// class: laptop holds each layer (its pinned layer lent), reading at most
// the 1.7 TB; min (nothing pinned, a 2.25 GB limit) cannot fit a
// buffer of the largest layer (the dense layer 0, 2.34 GB) but holds every
// other one (at most 1.27 GB), its sequence state and its expert cache
// beyond the chunk's slots lent to the chunk, reading at most the issue's
// 1.8 TB; desktop streams whole layers and does not hold.
TEST(PrefillChunkFit, LaptopHoldsEachLayer) {
  const ModelConfig& c = k3_model().config;
  for (const char* name : {"min", "laptop", "desktop"}) {
    const Preset& preset = *find_preset(name);
    const uint64_t available = preset.machine.available_bytes();
    const MemoryPlan got = plan_preset_for_prompt(preset, k3_model(), kTokens, available);
    ASSERT_TRUE(plan_fits(got, available)) << name;
    const double total = forecast_prefill_reads(c, got, kTokens).total();
    if (std::string(name) == "laptop") {
      EXPECT_TRUE(got.layer_held) << name;
      EXPECT_GT(got.pinned_lent_bytes, 0u) << name;
      EXPECT_EQ(got.chunk, kTokens) << name;
      EXPECT_LE(total, 1.7e12) << name;
    } else if (std::string(name) == "min") {
      EXPECT_TRUE(got.layer_held) << name;
      EXPECT_EQ(got.skipped_layers, 1u) << name;
      EXPECT_GT(got.state_lent_bytes, 0u) << name;
      EXPECT_GT(got.cache_lent_bytes, 0u) << name;
      EXPECT_EQ(got.chunk, kTokens) << name;
      EXPECT_LE(total, 1.8e12) << name;
    } else {
      EXPECT_FALSE(got.layer_held) << name;
    }
  }
}

// The sequence state lent at K3's geometry (RunRequest::lend_state): min's
// plan at 8,192 tokens by formula from the config written out here (1
// sequence, the stop copies of a plain run none: K3's 69 KDA layers of 96
// heads x 128 x 128 and three conv carries, 24 MLA layers of 576 floats a
// position, less the larger of one KDA layer's state and one MLA layer's
// cache at 8,192 positions); the forecast's file bytes for one chunk from
// position 0 (written and read: 2 KDA states + 8,192 positions of every MLA
// layer) and the search's bytes include them; the search lends the state
// only where a plan does not fit without it: min does (its peak by the
// plan's own terms), server does not.
TEST(PrefillChunkFit, LentStateFollowsItsFormulas) {
  const ModelConfig& c = k3_model().config;
  const Preset& min = *find_preset("min");
  RunRequest r = request_for(min);
  r.packed_trunk = true;
  r.batch = 16;
  r.spill_chunk = true;
  r.chunk_sub_batch = 512;
  const MemoryPlan kept = plan_of(r);
  r.lend_state = true;
  const MemoryPlan lent = plan_of(r);
  const uint64_t H = c.kda_num_heads, D = c.kda_head_dim, K = c.kda_conv_kernel;
  const uint64_t kda_layer = (H * D * D + 3 * (K - 1) * H * D) * 4, mla_layer = kTokens * 576 * 4;
  ASSERT_EQ(c.kv_lora_rank + c.qk_rope_head_dim, 576);
  const uint64_t kda = c.num_kda_layers() * kda_layer, mla = c.num_mla_layers() * mla_layer;
  EXPECT_EQ(lent.state_lent_bytes, kda + mla - std::max(kda_layer, mla_layer));
  EXPECT_EQ(lent.peak_rss, kept.peak_rss - std::min(kept.chunk_bytes, lent.state_lent_bytes));
  const PrefillReads reads = forecast_prefill_reads(c, lent, kTokens);
  const double once = 2.0 * static_cast<double>(kda) + static_cast<double>(mla);
  EXPECT_EQ(reads.state_written_bytes, once);
  EXPECT_EQ(reads.state_read_bytes, once);
  EXPECT_EQ(forecast_prefill_reads(c, kept, kTokens).state_read_bytes, 0.0);
  EXPECT_DOUBLE_EQ(prefill_disk_bytes(c, lent, kTokens), prefill_disk_bytes(c, kept, kTokens) + 2 * once);
  EXPECT_DOUBLE_EQ(reads.total(), forecast_prefill_reads(c, kept, kTokens).total() + once);

  for (const char* name : {"min", "server"}) {
    const Preset& preset = *find_preset(name);
    const uint64_t available = preset.machine.available_bytes();
    RunRequest req = request_for(preset);
    req.packed_trunk = true;
    const MemoryPlan got = fit_prefill_chunk(
        c, plan_of, [&](const MemoryPlan& p) { return plan_fits(p, available); }, req, kTokens, true);
    ASSERT_TRUE(plan_fits(got, available)) << name;
    EXPECT_EQ(req.lend_state, got.state_lent_bytes > 0) << name << ": the request left is the plan's";
    if (std::string(name) == "min") {
      EXPECT_GT(got.state_lent_bytes, 0u) << name;
      RunRequest without = req;
      without.lend_state = false;
      EXPECT_FALSE(plan_fits(plan_of(without), available)) << name << ": lent only where nothing fits without";
    } else {
      EXPECT_EQ(got.state_lent_bytes, 0u) << name;
    }
  }
}

}  // namespace
}  // namespace k3
