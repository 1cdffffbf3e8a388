// What planning/prefill_forecast.h forecasts a prompt reads, against its
// formula written out here for the tiny config and a plan built by hand:
// the streamed trunk once per chunk (once per sub-batch in row blocks), the
// embedding rows, the experts under flat routing, and a spilled chunk's
// block states written once and read back by every layer (twice for a
// sub-batch longer than the piece of rows a layer mixes at a time), and its
// MoE layers' shared-expert rows written and read back once each.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "model/config.h"
#include "planning/memory_plan.h"
#include "planning/prefill_forecast.h"

namespace k3 {
namespace {

const std::string kTiny = std::string(K3_TEST_DATA) + "/k3-tiny";

MemoryPlan hand_plan() {
  MemoryPlan p;
  p.batch = 16;
  p.chunk = 100;
  p.streamed_read_bytes = 1'000'000;
  p.slot_bytes = 4096 + 12288;  // one aligned read of 12,288 bytes
  p.cache_slots = 0;
  return p;
}

TEST(PrefillForecast, ChunksTrunkAndExperts) {
  const ModelConfig c = load_model_config(kTiny);
  const MemoryPlan p = hand_plan();
  const PrefillReads r = forecast_prefill_reads(c, p, 250);  // chunks of 100, 100, 50
  EXPECT_EQ(r.tokens, 250u);
  EXPECT_EQ(r.reads, 3u);
  const double L = c.num_hidden_layers - c.first_k_dense_replace, E = c.num_experts, k = c.num_experts_per_token;
  EXPECT_DOUBLE_EQ(r.trunk_bytes, 3 * 1e6 + 250.0 * c.hidden_size * 2);
  const double union100 = E * (1 - std::pow(1 - k / E, 100)), union50 = E * (1 - std::pow(1 - k / E, 50));
  EXPECT_NEAR(r.expert_bytes, L * (2 * union100 + union50) * 12288, 1e-6 * r.expert_bytes);
  EXPECT_EQ(r.spill_written_bytes, 0);
  EXPECT_EQ(r.spill_read_bytes, 0);
  EXPECT_DOUBLE_EQ(r.total(), r.trunk_bytes + r.expert_bytes);
}

// A cache that holds some experts saves their reads (flat routing: a
// chunk's expert misses are the share of all experts the cache does not
// hold); lent to the chunk (cache_lent_bytes), it holds only the chunk's own
// slots while the prompt runs, not decode's floor or the whole cache.
TEST(PrefillForecast, LentCacheHoldsTheChunkSlots) {
  const ModelConfig c = load_model_config(kTiny);
  MemoryPlan p = hand_plan();
  const double L = c.num_hidden_layers - c.first_k_dense_replace, E = c.num_experts, k = c.num_experts_per_token;
  const double union100 = E * (1 - std::pow(1 - k / E, 100)), union50 = E * (1 - std::pow(1 - k / E, 50));
  const double all = L * (2 * union100 + union50) * 12288;
  p.cache_slots = 40;
  p.min_slots = 4;
  p.chunk_slots = 2;
  EXPECT_NEAR(forecast_prefill_reads(c, p, 250).expert_bytes, all * (1 - 40 / (L * E)), 1e-9 * all);
  p.cache_lent_bytes = 38 * p.slot_bytes;
  EXPECT_NEAR(forecast_prefill_reads(c, p, 250).expert_bytes, all * (1 - 2 / (L * E)), 1e-9 * all);
}

// Row blocks: the trunk once per sub-batch of the chunk (chunk_sub_batch
// rows, a batch when unset); a piece no longer than that is one pass.
TEST(PrefillForecast, RowBlocksOncePerChunkSubBatch) {
  const ModelConfig c = load_model_config(kTiny);
  MemoryPlan p = hand_plan();
  p.row_blocks = 7;
  const double embedding = 250.0 * c.hidden_size * 2;
  // Sub-batches of a batch (16): chunks of 100, 100, 50 pass 7 + 7 + 4 times.
  EXPECT_DOUBLE_EQ(forecast_prefill_reads(c, p, 250).trunk_bytes, 18 * 1e6 + embedding);
  p.chunk_sub_batch = 40;  // 3 + 3 + 2
  EXPECT_DOUBLE_EQ(forecast_prefill_reads(c, p, 250).trunk_bytes, 8 * 1e6 + embedding);
  p.chunk_sub_batch = 100;  // once per chunk
  const PrefillReads once = forecast_prefill_reads(c, p, 250);
  EXPECT_DOUBLE_EQ(once.trunk_bytes, 3 * 1e6 + embedding);
  p.row_blocks = 0;  // whole layers: once per chunk whatever the sub-batch
  p.chunk_sub_batch = 0;
  EXPECT_DOUBLE_EQ(forecast_prefill_reads(c, p, 250).trunk_bytes, once.trunk_bytes);
}

TEST(PrefillForecast, SpilledChunkBlockStates) {
  const ModelConfig c = load_model_config(kTiny);
  ASSERT_EQ(c.hidden_size, 64);
  ASSERT_EQ(c.num_hidden_layers, 13);
  ASSERT_EQ(c.attn_res_block_size, 4);
  MemoryPlan p = hand_plan();
  p.chunk_spilled = true;
  const PrefillReads r = forecast_prefill_reads(c, p, 250);
  // Chunks of 100 and 100 spill; the last 50 too (more than a batch of 16).
  // A row of a block state is 64 floats = 256 bytes; 4 blocks are written;
  // layers 0-3 read 1 block, 4-7 two, 8-11 three, 12 four: 28 block reads.
  // The 12 MoE layers (1-12) each write a row of shared-expert output and
  // read it back.
  ASSERT_EQ(c.first_k_dense_replace, 1);
  EXPECT_DOUBLE_EQ(r.spill_written_bytes, 250.0 * (4 + 12) * 256);
  EXPECT_DOUBLE_EQ(r.spill_read_bytes, 250.0 * (28 + 12) * 256);
  EXPECT_DOUBLE_EQ(r.total(), r.trunk_bytes + r.expert_bytes + r.spill_read_bytes);
  // A last piece no longer than a batch runs as a batch: nothing spilled.
  const PrefillReads tail = forecast_prefill_reads(c, p, 210);  // 100, 100, 10
  EXPECT_DOUBLE_EQ(tail.spill_written_bytes, 200.0 * (4 + 12) * 256);
  // A sub-batch longer than a piece (256 rows) mixes its block states a
  // piece at a time, so each layer reads them for its attention's mix (all
  // but the block it opens: 28 - 4 = 24) and again for its FFN's (28).
  // Chunks of 400 and 100 in sub-batches of 300: 300 rows at 52, 200 at 28;
  // and every row's 12 shared-expert rows.
  p.chunk = 400;
  p.chunk_sub_batch = 300;
  const PrefillReads pieces = forecast_prefill_reads(c, p, 500);
  EXPECT_DOUBLE_EQ(pieces.spill_written_bytes, 500.0 * (4 + 12) * 256);
  EXPECT_DOUBLE_EQ(pieces.spill_read_bytes, (300.0 * 52 + 200.0 * 28 + 500.0 * 12) * 256);
}

}  // namespace
}  // namespace k3
