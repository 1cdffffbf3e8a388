// Rollback copies of the KDA state in the memory plan: speculation on by
// default (k3-chat) gives up drafts, halving them, before the prefill batch
// when the memory available is short; asked for explicitly, the drafts are
// kept and the batch is lowered (or the run refused) instead.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <sstream>
#include <string>

#include "checkpoint/checkpoint.h"
#include "common/error.h"
#include "model/config.h"
#include "runtime/streaming_setup.h"

using namespace k3;

namespace {

const std::string kTiny = std::string(K3_TEST_DATA) + "/k3-tiny";

struct Planned {
  uint64_t peak = 0, snapshots = 0, batch = 0;
  std::string log;
};

Planned plan(uint64_t snapshots, bool optional, uint64_t available) {
  if (available) ::setenv("K3_AVAILABLE_MEMORY", std::to_string(available).c_str(), 1);
  else ::unsetenv("K3_AVAILABLE_MEMORY");
  const ModelConfig config = load_model_config(kTiny);
  const Checkpoint checkpoint = Checkpoint::open(kTiny);
  RunRequest req;
  req.preset = "laptop";  // the trunk from the shards, held resident; routed experts through the cache
  req.context = 64;
  req.batch = 64;
  req.state_snapshots = snapshots;
  req.snapshots_optional = optional;
  std::ostringstream log;
  const PreparedStream p = prepare_streaming(config, checkpoint, req, log);
  ::unsetenv("K3_AVAILABLE_MEMORY");
  return {p.plan.peak_rss, p.plan_request.state_snapshots, p.plan.batch, log.str()};
}

// Memory available whose 90% limit (plan_limit) is `need` or a little more.
uint64_t available_for(uint64_t need) { return (need / 9 + 1) * 10; }

}  // namespace

TEST(SpeculationPlan, EachDraftCostsOneCopyOfTheKdaState) {
  const Planned none = plan(0, false, 0), four = plan(4, false, 0), one = plan(1, false, 0);
  ASSERT_GT(one.peak, none.peak);
  EXPECT_EQ(four.peak - none.peak, 4 * (one.peak - none.peak));
  EXPECT_EQ(four.snapshots, 4u);
  EXPECT_NE(four.log.find("4 rollback copies"), std::string::npos) << four.log;
}

TEST(SpeculationPlan, DefaultDraftsAreHalvedToFitBeforeTheBatch) {
  const Planned one = plan(1, false, 0), four = plan(4, false, 0);
  // Room for one copy but not two: the default 4 drafts become 1, the batch stays.
  const Planned lowered = plan(4, true, available_for(one.peak));
  EXPECT_EQ(lowered.snapshots, 1u);
  EXPECT_EQ(lowered.batch, four.batch);
  EXPECT_EQ(lowered.peak, one.peak);
  EXPECT_NE(lowered.log.find("speculation lowered from 4 to 1 drafts per pass"), std::string::npos) << lowered.log;
  // Room for none: drafting is off, still with the whole batch.
  const Planned none = plan(0, false, 0);
  const Planned off = plan(4, true, available_for(none.peak));
  EXPECT_EQ(off.snapshots, 0u);
  EXPECT_EQ(off.batch, none.batch);
  // Plenty of memory: nothing lowered, nothing said.
  const Planned kept = plan(4, true, 0);
  EXPECT_EQ(kept.snapshots, 4u);
  EXPECT_EQ(kept.log.find("lowered"), std::string::npos);
}

TEST(SpeculationPlan, ExplicitDraftsAreKeptOrRefused) {
  const Planned one = plan(1, false, 0);
  // An explicit --spec keeps its copies: the batch is lowered instead, or the
  // run refused (exit 6) when even one row at a time does not fit.
  try {
    const Planned p = plan(4, false, available_for(one.peak));
    EXPECT_EQ(p.snapshots, 4u);
    EXPECT_LT(p.batch, one.batch);
    EXPECT_NE(p.log.find("prefill batch lowered"), std::string::npos) << p.log;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kResource) << e.what();
  }
}
