// Rolling back rows of a multi-row pass (speculative verification) and
// passes over several sequences at once (batches), on the tiny checkpoint,
// which has KDA and MLA layers: a state rolled back to k rows is
// memcmp-identical, in every layer type (KDA recurrent state, the three conv
// carries, MLA latent cache), to a state that only ever ran those k rows,
// and the logits that follow are the same bits; a batch of sequences gives
// each sequence the bits it gets alone.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/error.h"
#include "common/thread_pool.h"
#include "lib/test_util.h"
#include "model/forward_pass.h"
#include "model_fixture.h"

namespace k3 {
namespace {

void expect_same_state(const ModelConfig& c, const SequenceState& a, const SequenceState& b) {
  EXPECT_EQ(a.positions, b.positions);
  EXPECT_EQ(a.tokens, b.tokens);
  ASSERT_EQ(a.layers.size(), b.layers.size());
  bool saw_kda = false, saw_mla = false;
  for (size_t i = 0; i < a.layers.size(); ++i) {
    if (c.is_kda_layer(static_cast<int>(i))) {
      saw_kda = true;
      EXPECT_TRUE(test::same_bits(a.layers[i].kda.S, b.layers[i].kda.S)) << "KDA S, layer " << i;
      EXPECT_TRUE(test::same_bits(a.layers[i].kda.conv_q, b.layers[i].kda.conv_q)) << "conv q, layer " << i;
      EXPECT_TRUE(test::same_bits(a.layers[i].kda.conv_k, b.layers[i].kda.conv_k)) << "conv k, layer " << i;
      EXPECT_TRUE(test::same_bits(a.layers[i].kda.conv_v, b.layers[i].kda.conv_v)) << "conv v, layer " << i;
    } else {
      saw_mla = true;
      EXPECT_TRUE(test::same_bits(a.layers[i].mla.latent, b.layers[i].mla.latent)) << "MLA latent, layer " << i;
    }
  }
  EXPECT_TRUE(saw_kda && saw_mla) << "the fixture should exercise both layer types";
}

class RowRollbackTest : public ::testing::Test {
 protected:
  test::TinyModel& m = test::TinyModel::get();
  const test::Golden& g = test::Golden::get();
  ThreadPool pool{2};
  ForwardPass engine{m.config, *m.weights, pool};
  size_t vocab = static_cast<size_t>(m.config.vocab_size);

  std::vector<float> forward_rows(SequenceState& s, const std::vector<int32_t>& ids, RowHistory* h) {
    std::vector<float> logits(ids.size() * vocab);
    SequenceState* seq = &s;
    const std::span<const int32_t> span(ids);
    RowHistory* hist[1] = {h};
    engine.forward_sequences(std::span<SequenceState* const>(&seq, 1),
                             std::span<const std::span<const int32_t>>(&span, 1), logits.data(),
                             h ? std::span<RowHistory* const>(hist, 1) : std::span<RowHistory* const>());
    return logits;
  }
};

TEST_F(RowRollbackTest, RollbackEqualsNeverHavingRunTheRows) {
  const std::vector<int32_t> prompt = g.greedy_prompt;
  const std::vector<int32_t> rows = {g.tf_ids[0], g.tf_ids[1], g.tf_ids[2], g.tf_ids[3], g.tf_ids[4]};
  for (size_t keep = 1; keep <= rows.size(); ++keep) {
    SequenceState a, b;
    engine.reset(a);
    engine.reset(b);
    std::vector<float> unused(vocab);
    engine.forward(a, prompt, LogitRows::kLast, unused.data());
    engine.forward(b, prompt, LogitRows::kLast, unused.data());
    RowHistory h;
    const std::vector<float> all = forward_rows(a, rows, &h);
    engine.rollback(a, h, keep);
    // b runs only the kept rows, one at a time (decode).
    std::vector<float> step(vocab);
    for (size_t i = 0; i < keep; ++i) {
      engine.forward(b, std::span<const int32_t>(&rows[i], 1), LogitRows::kLast, step.data());
      EXPECT_EQ(std::memcmp(step.data(), all.data() + i * vocab, vocab * sizeof(float)), 0) << "row " << i;
    }
    expect_same_state(m.config, a, b);
    // And the next token's logits are the same bits.
    std::vector<float> la(vocab), lb(vocab);
    const int32_t next = g.tf_ids[7];
    engine.forward(a, std::span<const int32_t>(&next, 1), LogitRows::kLast, la.data());
    engine.forward(b, std::span<const int32_t>(&next, 1), LogitRows::kLast, lb.data());
    EXPECT_EQ(std::memcmp(la.data(), lb.data(), vocab * sizeof(float)), 0) << "keep " << keep;
  }
}

TEST_F(RowRollbackTest, RollbackOutsideTheRecordedRowsIsRefused) {
  SequenceState a;
  engine.reset(a);
  RowHistory h;
  forward_rows(a, {g.tf_ids[0], g.tf_ids[1]}, &h);
  EXPECT_THROW(engine.rollback(a, h, 0), Error);
  EXPECT_THROW(engine.rollback(a, h, 3), Error);
}

TEST_F(RowRollbackTest, SequencesInOnePassGetTheirOwnBits) {
  // Three sequences at different lengths, each with 1..3 new rows in one pass.
  const std::vector<std::vector<int32_t>> prompts = {
      g.greedy_prompt, {g.tf_ids.begin(), g.tf_ids.begin() + 9}, {g.tf_ids[20], g.tf_ids[21]}};
  const std::vector<std::vector<int32_t>> news = {
      {g.tf_ids[3]}, {g.tf_ids[10], g.tf_ids[11]}, {g.tf_ids[22], g.tf_ids[23], g.tf_ids[24]}};
  std::vector<SequenceState> together(3), alone(3);
  std::vector<float> unused(vocab);
  std::vector<std::vector<float>> want;
  for (size_t i = 0; i < 3; ++i) {
    engine.reset(together[i]);
    engine.reset(alone[i]);
    engine.forward(together[i], prompts[i], LogitRows::kLast, unused.data());
    engine.forward(alone[i], prompts[i], LogitRows::kLast, unused.data());
    want.push_back(forward_rows(alone[i], news[i], nullptr));
  }
  std::vector<SequenceState*> states = {&together[0], &together[1], &together[2]};
  std::vector<std::span<const int32_t>> ids(news.begin(), news.end());
  std::vector<float> got(6 * vocab);
  engine.forward_sequences(states, ids, got.data());
  size_t row = 0;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(std::memcmp(got.data() + row * vocab, want[i].data(), want[i].size() * sizeof(float)), 0)
        << "sequence " << i;
    row += news[i].size();
    expect_same_state(m.config, together[i], alone[i]);
  }
}

TEST_F(RowRollbackTest, LastRowOfEachSequenceGetsItsOwnBits) {
  // A server's pass: one sequence's prompt from nothing (13 rows), one
  // continuing with a chunk (4 rows), one decode row. Only each sequence's
  // last row goes through the head; those logits are the bits of running
  // each sequence alone, and the states are too.
  const std::vector<std::vector<int32_t>> before = {{}, {g.tf_ids.begin(), g.tf_ids.begin() + 7}, g.greedy_prompt};
  const std::vector<std::vector<int32_t>> news = {
      {g.tf_ids.begin() + 2, g.tf_ids.begin() + 15}, {g.tf_ids.begin() + 7, g.tf_ids.begin() + 11}, {g.tf_ids[30]}};
  std::vector<SequenceState> together(3), alone(3);
  std::vector<float> unused(vocab);
  std::vector<std::vector<float>> want(3, std::vector<float>(vocab));
  for (size_t i = 0; i < 3; ++i) {
    engine.reset(together[i]);
    engine.reset(alone[i]);
    if (!before[i].empty()) {
      engine.forward(together[i], before[i], LogitRows::kLast, unused.data());
      engine.forward(alone[i], before[i], LogitRows::kLast, unused.data());
    }
    engine.forward(alone[i], news[i], LogitRows::kLast, want[i].data());
  }
  std::vector<SequenceState*> states = {&together[0], &together[1], &together[2]};
  std::vector<std::span<const int32_t>> ids(news.begin(), news.end());
  std::vector<float> got(3 * vocab);
  engine.forward_sequences_last(states, ids, got.data());
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(std::memcmp(got.data() + i * vocab, want[i].data(), vocab * sizeof(float)), 0) << "sequence " << i;
    expect_same_state(m.config, together[i], alone[i]);
  }
}

}  // namespace
}  // namespace k3
