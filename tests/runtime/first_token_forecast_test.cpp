// The time-to-first-token forecast (planning/first_token_forecast.h) against
// its formula written out here: seconds = bytes read / read rate + tokens x
// flops per token / flops a second, for a hand-built plan of the tiny
// model; flops per token = 2 x (the layers' trunk matrices + 12 MoE layers x
// top-4 x 3 routed-expert matrices of 64 x 32); and the plan a preset makes
// for a prompt: the whole prompt in one chunk where it fits, the batch
// halved down to one token before the chunk is (the tiny model's spill file
// moves more bytes than its weights, so it never spills).
#include <gtest/gtest.h>

#include <string>

#include "model/config.h"
#include "model/tensor_manifest.h"
#include "planning/first_token_forecast.h"
#include "planning/memory_plan.h"
#include "planning/prefill_chunk_fit.h"
#include "planning/prefill_forecast.h"
#include "planning/preset_plan.h"

namespace k3 {
namespace {

const std::string kTiny = std::string(K3_TEST_DATA) + "/k3-tiny";

TEST(FirstTokenForecast, FlopsPerToken) {
  const ModelConfig c = load_model_config(kTiny);
  // The layers' trunk matrices, from the manifest's shapes.
  double trunk = 0;
  for (const ExpectedTensor& t : expected_tensors(c))
    if (t.group == TensorGroup::kLayerTrunk && t.shape.size() == 2) trunk += double(t.shape[0]) * double(t.shape[1]);
  ASSERT_GT(trunk, 0);
  // 13 layers, the first dense: 12 MoE layers x 4 experts x 3 matrices of 64 x 32.
  const double experts = 12.0 * 4 * 3 * 64 * 32;
  EXPECT_DOUBLE_EQ(prefill_flops_per_token(c), 2 * (trunk + experts));
}

TEST(FirstTokenForecast, SecondsAreReadingPlusCompute) {
  const ModelConfig c = load_model_config(kTiny);
  MemoryPlan p;
  p.batch = 16;
  p.chunk = 4000;
  p.streamed_read_bytes = 2'000'000;
  p.slot_bytes = 4096 + 12288;
  const double rate = 3e9, flops = 40e9;
  const FirstTokenForecast f = forecast_first_token(c, p, 4000, rate, flops);
  const PrefillReads reads = forecast_prefill_reads(c, p, 4000);
  EXPECT_EQ(f.reads.reads, 1u);
  EXPECT_DOUBLE_EQ(f.reads.total(), reads.total());
  EXPECT_DOUBLE_EQ(f.read_seconds, reads.total() / 3e9);
  const double per_token = prefill_flops_per_token(c);
  EXPECT_DOUBLE_EQ(f.tokens_per_s, 40e9 / per_token);
  EXPECT_NEAR(f.compute_seconds, 4000 * per_token / 40e9, 1e-12 * f.compute_seconds);
  EXPECT_DOUBLE_EQ(f.seconds(), f.read_seconds + f.compute_seconds);
  // Twice the CPU: half the compute, the same reading.
  const FirstTokenForecast fast = forecast_first_token(c, p, 4000, rate, 2 * flops);
  EXPECT_NEAR(fast.compute_seconds, f.compute_seconds / 2, 1e-12 * f.compute_seconds);
  EXPECT_DOUBLE_EQ(fast.read_seconds, f.read_seconds);
  const std::string text = describe_first_token(f, p);
  EXPECT_NE(text.find("4000 tokens: "), std::string::npos) << text;
  EXPECT_NE(text.find("1 read of the weights per 4000 tokens, a batch of " + std::to_string(p.batch)),
            std::string::npos)
      << text;
}

TEST(FirstTokenForecast, PresetPlanForAPrompt) {
  const ModelConfig c = load_model_config(kTiny);
  const PlanModel model = plan_model_for_config(c);
  const Preset& min = *find_preset("min");
  // Plenty of memory: one chunk of the whole prompt, in memory.
  const MemoryPlan roomy = plan_preset_for_prompt(min, model, 3000, UINT64_MAX - 1);
  EXPECT_EQ(roomy.chunk, 3000u);
  EXPECT_FALSE(roomy.chunk_spilled);
  // Just short of that: the chunk whole and in memory at the same batch,
  // the expert cache beyond the chunk's own slots lent to it (the refill of
  // those slots is far inside the batch slack; a halved batch would cost
  // compute). Spilling its block states instead would move more bytes on
  // the disk (the file written, then read back by every layer) than the
  // whole prompt's weights, more than the slack allows.
  const MemoryPlan tight = plan_preset_for_prompt(min, model, 3000, roomy.peak_rss / 9 * 10 - 1);
  EXPECT_FALSE(plan_fits(roomy, roomy.peak_rss / 9 * 10 - 1));
  EXPECT_EQ(tight.batch, roomy.batch);
  EXPECT_EQ(tight.cache_lent_bytes, (tight.cache_slots - tight.chunk_slots) * tight.slot_bytes);
  EXPECT_EQ(tight.chunk, 3000u);
  EXPECT_FALSE(tight.chunk_spilled);
  EXPECT_LT(tight.peak_rss, roomy.peak_rss);
  RunRequest run;
  run.context = 3000;
  RunRequest spill = preset_plan_request(min, model, run);
  spill.chunk = 3000;
  spill.spill_chunk = true;
  const MemoryPlan spilled = plan_memory(c, model.layout, model.slot_bytes, spill);
  ASSERT_TRUE(spilled.chunk_spilled);
  EXPECT_TRUE(plan_fits(spilled, roomy.peak_rss / 9 * 10 - 1));
  const PrefillReads s = forecast_prefill_reads(c, spilled, 3000);
  EXPECT_GT(s.spill_written_bytes + s.spill_read_bytes, kBatchBytesSlack * prefill_disk_bytes(c, tight, 3000));
  // Tighter still: the batch goes down to one token before the chunk is
  // halved, and the chunk is halved, in memory, before it spills or lends
  // the sequence state (at the tiny model's size the state's file, its MLA
  // caches at the context written and read back, moves about as many bytes
  // as a second read of the weights, and a halved chunk keeps a larger
  // batch within the slack).
  MemoryPlan lowest = tight, halved = tight;
  for (int i = 0; i < 32 && halved.chunk == 3000u; ++i) {
    lowest = halved;
    halved = plan_preset_for_prompt(min, model, 3000, lowest.peak_rss / 9 * 10 - 1);
  }
  EXPECT_EQ(lowest.batch, 1u);
  EXPECT_EQ(lowest.chunk, 3000u);
  EXPECT_EQ(halved.chunk, 1500u);
  EXPECT_FALSE(halved.chunk_spilled);
  EXPECT_EQ(halved.state_lent_bytes, 0u);
  const MemoryPlan none = plan_preset_for_prompt(min, model, 3000, 1);
  EXPECT_EQ(none.chunk, none.batch);
}

}  // namespace
}  // namespace k3
