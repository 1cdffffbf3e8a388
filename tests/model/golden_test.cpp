// The engine against the reference outputs of the tiny checkpoint
// (tests/data/k3-tiny/golden.json, golden_logits.safetensors).
#include <gtest/gtest.h>

#include <cstring>

#include "common/thread_pool.h"
#include "model/forward_pass.h"
#include "model_fixture.h"

namespace k3 {
namespace {

using test::Golden;
using test::TinyModel;

std::vector<float> run(int threads, const std::vector<int32_t>& ids, LogitRows rows) {
  TinyModel& m = TinyModel::get();
  ThreadPool pool(threads);
  ForwardPass engine(m.config, *m.weights, pool);
  SequenceState state;
  engine.reset(state);
  const size_t vocab = m.config.vocab_size;
  std::vector<float> logits((rows == LogitRows::kAll ? ids.size() : 1) * vocab);
  engine.forward(state, ids, rows, logits.data());
  return logits;
}

// GATE 1: teacher forcing over 32 positions.
TEST(Golden, TeacherForcingMatchesReference) {
  const Golden& g = Golden::get();
  const size_t vocab = TinyModel::get().config.vocab_size;
  ASSERT_EQ(g.tf_ids.size(), 32u);
  ASSERT_EQ(g.tf_logits.size(), 32 * vocab);
  std::vector<float> logits = run(2, g.tf_ids, LogitRows::kAll);
  for (size_t t = 0; t < g.tf_ids.size(); ++t)
    EXPECT_EQ(test::argmax_row(logits.data() + t * vocab, vocab), g.tf_argmax[t]) << "position " << t;
  const float ref = test::max_abs(g.tf_logits.data(), g.tf_logits.size());
  const float err = test::max_abs_diff(logits.data(), g.tf_logits.data(), logits.size());
  std::printf("teacher forcing: max |logit - golden| = %.3g, relative to max |golden| (%.4g) = %.3g\n", err, ref,
              err / ref);
  EXPECT_LE(err, 1e-4f * ref);
}

// GATE 2: greedy by full recompute of the prefix at every step.
TEST(Golden, GreedyFullRecomputeMatchesReference) {
  const Golden& g = Golden::get();
  const size_t vocab = TinyModel::get().config.vocab_size;
  ASSERT_EQ(g.greedy_ids.size(), 20u);
  const float ref = test::max_abs(g.greedy_logits.data(), g.greedy_logits.size());
  std::vector<int32_t> seq = g.greedy_prompt;
  float worst = 0;
  for (size_t step = 0; step < g.greedy_ids.size(); ++step) {
    std::vector<float> logits = run(2, seq, LogitRows::kLast);
    const int32_t id = test::argmax_row(logits.data(), vocab);
    ASSERT_EQ(id, g.greedy_ids[step]) << "step " << step;
    worst = std::max(worst, test::max_abs_diff(logits.data(), g.greedy_logits.data() + step * vocab, vocab));
    seq.push_back(id);
  }
  std::printf("greedy recompute: max |logit - golden| = %.3g (relative %.3g)\n", worst, worst / ref);
  EXPECT_LE(worst, 1e-4f * ref);
}

// GATE 3: incremental decoding with carried state gives the same ids, and
// each step's logits equal the recompute path's within the tolerance.
TEST(Golden, IncrementalDecodeMatchesRecompute) {
  const Golden& g = Golden::get();
  TinyModel& m = TinyModel::get();
  const size_t vocab = m.config.vocab_size;
  ThreadPool pool(2);
  ForwardPass engine(m.config, *m.weights, pool);
  SequenceState state;
  engine.reset(state);
  std::vector<float> logits(vocab);
  engine.forward(state, g.greedy_prompt, LogitRows::kLast, logits.data());
  std::vector<int32_t> seq = g.greedy_prompt;
  const float ref = test::max_abs(g.greedy_logits.data(), g.greedy_logits.size());
  float worst_vs_recompute = 0, worst_vs_golden = 0;
  for (size_t step = 0; step < g.greedy_ids.size(); ++step) {
    const int32_t id = test::argmax_row(logits.data(), vocab);
    ASSERT_EQ(id, g.greedy_ids[step]) << "step " << step;
    std::vector<float> recompute = run(2, seq, LogitRows::kLast);
    worst_vs_recompute = std::max(worst_vs_recompute, test::max_abs_diff(logits.data(), recompute.data(), vocab));
    worst_vs_golden =
        std::max(worst_vs_golden, test::max_abs_diff(logits.data(), g.greedy_logits.data() + step * vocab, vocab));
    seq.push_back(id);
    const int32_t next = id;
    engine.forward(state, std::span<const int32_t>(&next, 1), LogitRows::kLast, logits.data());
  }
  EXPECT_EQ(state.positions, static_cast<int64_t>(seq.size()));
  std::printf("incremental: max |logit - recompute| = %.3g, max |logit - golden| = %.3g\n", worst_vs_recompute,
              worst_vs_golden);
  EXPECT_LE(worst_vs_recompute, 1e-4f * ref);
  EXPECT_LE(worst_vs_golden, 1e-4f * ref);
}

TEST(Golden, LogitsBitIdenticalForThreads124) {
  const Golden& g = Golden::get();
  std::vector<float> one = run(1, g.tf_ids, LogitRows::kAll);
  for (int threads : {2, 4}) {
    std::vector<float> other = run(threads, g.tf_ids, LogitRows::kAll);
    ASSERT_EQ(other.size(), one.size());
    EXPECT_EQ(std::memcmp(one.data(), other.data(), one.size() * sizeof(float)), 0) << threads << " threads";
  }
}

// A batch prefill and token-by-token decode give bit-identical logits, and
// so does a prompt split into several batches.
TEST(Golden, BatchedPrefillBitIdenticalToTokenByToken) {
  const Golden& g = Golden::get();
  TinyModel& m = TinyModel::get();
  const size_t vocab = m.config.vocab_size, n = g.tf_ids.size();
  std::vector<float> batched = run(2, g.tf_ids, LogitRows::kAll);

  ThreadPool pool(3);
  ForwardPass engine(m.config, *m.weights, pool);
  SequenceState state;
  engine.reset(state);
  std::vector<float> stepwise(n * vocab);
  for (size_t t = 0; t < n; ++t)
    engine.forward(state, std::span<const int32_t>(&g.tf_ids[t], 1), LogitRows::kLast, stepwise.data() + t * vocab);
  EXPECT_EQ(std::memcmp(batched.data(), stepwise.data(), batched.size() * sizeof(float)), 0);

  engine.set_max_batch(5);
  engine.reset(state);
  std::vector<float> chunked(n * vocab);
  engine.forward(state, g.tf_ids, LogitRows::kAll, chunked.data());
  EXPECT_EQ(std::memcmp(batched.data(), chunked.data(), batched.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace k3
