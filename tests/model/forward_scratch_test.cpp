// The engine's scratch memory: reusing it (even full of NaN from the last
// pass) gives the bits of a fresh one, and decode steps do not reallocate it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "common/thread_pool.h"
#include "model/forward_pass.h"
#include "model/forward_scratch.h"
#include "model_fixture.h"

namespace k3 {
namespace {

using test::Golden;
using test::TinyModel;

// A prefill of the first `prefill` ids (logits of every row), then the rest
// one decode step at a time: [ids.size(), vocab].
std::vector<float> prefill_then_decode(ForwardPass& engine, const std::vector<int32_t>& ids, size_t prefill,
                                       bool poison_between_passes) {
  const size_t vocab = engine.config().vocab_size;
  std::vector<float> logits(ids.size() * vocab);
  SequenceState state;
  engine.reset(state);
  if (poison_between_passes) engine.scratch().poison();
  engine.forward(state, std::span<const int32_t>(ids.data(), prefill), LogitRows::kAll, logits.data());
  for (size_t t = prefill; t < ids.size(); ++t) {
    if (poison_between_passes) engine.scratch().poison();
    engine.forward(state, std::span<const int32_t>(&ids[t], 1), LogitRows::kLast, logits.data() + t * vocab);
  }
  return logits;
}

TEST(ForwardScratch, ReusedScratchGivesTheBitsOfAFreshOne) {
  const Golden& g = Golden::get();
  TinyModel& m = TinyModel::get();
  const std::vector<int32_t>& ids = g.tf_ids;
  ASSERT_GE(ids.size(), 8u);
  ThreadPool pool(2);

  ForwardPass fresh(m.config, *m.weights, pool);
  const std::vector<float> want = prefill_then_decode(fresh, ids, ids.size() / 2, false);
  for (float v : want) ASSERT_TRUE(std::isfinite(v));

  // The same engine again: its scratch holds the last run's values.
  const std::vector<float> again = prefill_then_decode(fresh, ids, ids.size() / 2, false);
  EXPECT_EQ(std::memcmp(want.data(), again.data(), want.size() * sizeof(float)), 0);

  // A scratch first sized by another, larger pass, then filled with NaN
  // before every pass: an op that read scratch before writing it would
  // show here.
  ForwardPass reused(m.config, *m.weights, pool);
  {
    SequenceState other;
    reused.reset(other);
    std::vector<int32_t> longer = g.greedy_prompt;
    longer.insert(longer.end(), ids.begin(), ids.end());
    std::vector<float> logits(m.config.vocab_size);
    reused.forward(other, longer, LogitRows::kLast, logits.data());
  }
  const std::vector<float> poisoned = prefill_then_decode(reused, ids, ids.size() / 2, true);
  EXPECT_EQ(std::memcmp(want.data(), poisoned.data(), want.size() * sizeof(float)), 0);

  // And the teacher-forcing golden itself (a fresh scratch per run above).
  const size_t vocab = m.config.vocab_size;
  ASSERT_EQ(g.tf_logits.size(), ids.size() * vocab);
  for (size_t t = 0; t < ids.size(); ++t) {
    const float* row = want.data() + t * vocab;
    EXPECT_EQ(static_cast<int32_t>(std::max_element(row, row + vocab) - row), g.tf_argmax[t]) << t;
  }
}

TEST(ForwardScratch, DecodeStepsDoNotReallocate) {
  const Golden& g = Golden::get();
  TinyModel& m = TinyModel::get();
  const std::vector<int32_t>& ids = g.tf_ids;
  const size_t vocab = m.config.vocab_size, prefill = 4;
  ThreadPool pool(3);
  ForwardPass engine(m.config, *m.weights, pool);
  SequenceState state;
  engine.reset(state);
  std::vector<float> logits(vocab);
  engine.forward(state, std::span<const int32_t>(ids.data(), prefill), LogitRows::kLast, logits.data());

  ForwardScratch& scratch = engine.scratch();
  const uint64_t growths = scratch.growths(), bytes = scratch.bytes();
  EXPECT_GT(growths, 0u);
  EXPECT_GT(bytes, 0u);
  const float* h = scratch.h();
  const float* p = scratch.stream().p;
  const float* op = scratch.op_floats(0);
  const size_t* indices = scratch.op_indices(0);
  for (size_t t = prefill; t < ids.size(); ++t) {
    engine.forward(state, std::span<const int32_t>(&ids[t], 1), LogitRows::kLast, logits.data());
    EXPECT_EQ(scratch.growths(), growths) << "decode step at position " << t;
    EXPECT_EQ(scratch.h(), h);
    EXPECT_EQ(scratch.stream().p, p);
    EXPECT_EQ(scratch.op_floats(0), op);
    EXPECT_EQ(scratch.op_indices(0), indices);
  }
  EXPECT_EQ(scratch.bytes(), bytes);

  // A pass with more rows than any before does grow it (the count is live).
  SequenceState wide;
  engine.reset(wide);
  engine.forward(wide, ids, LogitRows::kLast, logits.data());
  EXPECT_GT(scratch.growths(), growths);
  EXPECT_GT(scratch.bytes(), bytes);
}

}  // namespace
}  // namespace k3
