// fit_prefill_chunk (planning/prefill_chunk_fit.h) against a brute force over
// every batch (halved down to one token), chunk (the prompt halved down to a
// batch), spill choice, lending of the expert cache and sub-batch (the chunk
// halved down to a batch) at K3's geometry: the plan it returns fits, and no
// plan that fits reads fewer bytes of weights for the prompt; where nothing
// fits, the chunk is one batch. The memory plan counts a sub-batch's scratch
// beyond a batch's in the chunk (prefill_sub_batch_scratch_bytes) and takes
// it only where the trunk streams in row blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

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

MemoryPlan plan_of(const RunRequest& r) {
  const PlanModel& m = k3_model();
  return plan_memory(m.config, m.layout, m.slot_bytes, r);
}

// What the search minimizes: the weights' bytes, with the lent cache's
// refill (the spill file's reads only break ties).
double bytes_of(const MemoryPlan& p) {
  const PrefillReads r = forecast_prefill_reads(k3_model().config, p, kTokens);
  return r.trunk_bytes + r.expert_bytes + static_cast<double>(p.cache_lent_bytes);
}

// The fewest bytes of weights any plan that fits reads, over every batch
// (the request's halved down to one), chunk, spill choice, lending and
// sub-batch; infinity where none fits.
double brute_force_fewest_bytes(const RunRequest& base, const PlanFits& fits) {
  double best = std::numeric_limits<double>::infinity();
  for (uint64_t batch = plan_of(base).batch;; batch /= 2) {
    for (uint64_t chunk = kTokens;; chunk = std::max(batch, chunk / 2)) {
      for (bool spill : {false, true})
        for (bool lend : {false, true})
          for (uint64_t sub = chunk;; sub = std::max(batch, sub / 2)) {
            RunRequest r = base;
            r.batch = batch;
            r.chunk = chunk;
            r.spill_chunk = spill;
            r.lend_cache = lend;
            r.chunk_sub_batch = sub;
            const MemoryPlan p = plan_of(r);
            if (fits(p)) best = std::min(best, bytes_of(p));
            if (sub == batch || p.row_blocks == 0) break;  // without row blocks the plan takes no sub-batch
          }
      if (chunk == batch) break;
    }
    if (batch == 1) break;
  }
  return best;
}

TEST(PrefillChunkFit, FewestBytesOfEveryPlanThatFits) {
  for (const char* name : {"min", "laptop", "desktop"}) {
    const Preset& preset = *find_preset(name);
    // Each on its machine class (the brute force over every batch takes up
    // to a second a case; where nothing fits: first_token_forecast_test).
    for (double gb : {preset.machine.available_gb}) {
      const uint64_t available = static_cast<uint64_t>(gb * 1e9);
      const auto fits = [&](const MemoryPlan& p) { return plan_fits(p, available); };
      const std::string what = std::string(name) + " with " + std::to_string(gb) + " GB";
      const RunRequest base = request_for(preset);
      const double best = brute_force_fewest_bytes(base, fits);
      RunRequest req = base;
      const MemoryPlan got = fit_prefill_chunk(k3_model().config, plan_of, fits, req, kTokens, true);
      if (std::isinf(best)) {
        EXPECT_FALSE(fits(got)) << what;
        EXPECT_EQ(got.chunk, got.batch) << what;
        continue;
      }
      EXPECT_TRUE(fits(got)) << what;
      EXPECT_DOUBLE_EQ(bytes_of(got), best) << what;
      // The request it leaves is the plan's.
      EXPECT_EQ(plan_of(req).peak_rss, got.peak_rss) << what;
      EXPECT_EQ(req.chunk, got.chunk) << what;
      EXPECT_EQ(req.batch, got.batch) << what;
    }
  }
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
    EXPECT_EQ(reads.spill_written_bytes, 8.0 * 2048 * row);
    EXPECT_EQ(reads.spill_read_bytes, (sub > 256 ? opened + before : opened) * 2048 * row) << sub;
  }
}

}  // namespace
}  // namespace k3
