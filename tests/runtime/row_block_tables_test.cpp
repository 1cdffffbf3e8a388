// The row-block tables a search builds once (planning/row_block_tables.h)
// against the plan made without them: at K3's geometry, for min's and
// laptop's row blocks and a range of requests (trunk budgets, batches,
// chunks, sub-batches, spilled, lent), every field the tables feed and the
// peak are equal; tables built for another block size or another layout
// are not used; no tables below the smallest block.
#include <gtest/gtest.h>

#include <string>

#include "model/k3_geometry.h"
#include "planning/memory_plan.h"
#include "planning/preset_plan.h"
#include "planning/presets.h"
#include "planning/row_block_tables.h"
#include "trunk/row_blocks.h"

namespace k3 {
namespace {

const PlanModel& k3_model() {
  static const PlanModel m = plan_model_for_config(k3_reference_config());
  return m;
}

void expect_same_plan(const MemoryPlan& a, const MemoryPlan& b, const std::string& what) {
  EXPECT_GT(a.row_blocks, 0u) << what;
  EXPECT_EQ(a.row_blocks, b.row_blocks) << what;
  EXPECT_EQ(a.held_bytes, b.held_bytes) << what;
  EXPECT_EQ(a.stream_buffer_size, b.stream_buffer_size) << what;
  EXPECT_EQ(a.stream_buffers, b.stream_buffers) << what;
  EXPECT_EQ(a.chunk_bytes, b.chunk_bytes) << what;
  EXPECT_EQ(a.streamed_read_bytes, b.streamed_read_bytes) << what;
  EXPECT_EQ(a.peak_rss, b.peak_rss) << what;
}

TEST(RowBlockTables, SamePlanAsWithout) {
  const PlanModel& m = k3_model();
  for (const char* name : {"min", "laptop"}) {
    RunRequest run;
    run.context = 8192;
    const RunRequest base = preset_plan_request(*find_preset(name), m, run);
    ASSERT_GT(base.block_bytes, 0u) << name;
    const RowBlockTables tables = row_block_tables(m.config, m.layout, base.block_bytes);
    EXPECT_EQ(tables.block_bytes, base.block_bytes);
    for (uint64_t trunk_gb : {0, 2, 30})
      for (uint64_t batch : {1, 32})
        for (uint64_t sub : {0, 1024}) {
          RunRequest r = base;
          r.trunk_budget = trunk_gb * 1'000'000'000;
          r.batch = batch;
          r.chunk = 4096;
          r.chunk_sub_batch = sub;
          r.spill_chunk = sub > 0;
          r.lend_cache = batch == 1;
          const std::string what = std::string(name) + ", trunk " + std::to_string(trunk_gb) + " GB, batch " +
                                   std::to_string(batch) + ", sub-batch " + std::to_string(sub);
          expect_same_plan(plan_memory(m.config, m.layout, m.slot_bytes, r, &tables),
                           plan_memory(m.config, m.layout, m.slot_bytes, r), what);
        }
  }
}

TEST(RowBlockTables, OnlyForTheirBlockSizeAndLayout) {
  const PlanModel& m = k3_model();
  RunRequest run;
  run.context = 4096;
  RunRequest r = preset_plan_request(*find_preset("min"), m, run);
  const RowBlockTables other = row_block_tables(m.config, m.layout, 2 * r.block_bytes);
  ASSERT_EQ(other.block_bytes, 2 * r.block_bytes);
  const MemoryPlan own = plan_memory(m.config, m.layout, m.slot_bytes, r);
  expect_same_plan(plan_memory(m.config, m.layout, m.slot_bytes, r, &other), own, "tables of twice the block");
  // Tables of another layout (one section): not taken for this one.
  TrunkLayout one;
  one.sections.push_back(m.layout.sections.front());
  const RowBlockTables small = row_block_tables(m.config, one, r.block_bytes);
  expect_same_plan(plan_memory(m.config, m.layout, m.slot_bytes, r, &small), own, "another layout's tables");
  // Below one row of the widest matrix: none built; the plan refuses it.
  const uint64_t floor = min_block_bytes(m.config);
  EXPECT_EQ(row_block_tables(m.config, m.layout, floor - 1).block_bytes, 0u);
  EXPECT_TRUE(row_block_tables(m.config, m.layout, floor - 1).sections.empty());
}

}  // namespace
}  // namespace k3
