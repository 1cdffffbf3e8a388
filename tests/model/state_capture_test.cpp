// States captured inside a pass (ForwardPass::forward_sequences_last with
// StateCaptures) against the state a pass ending there gives: the prompt's
// first k ids run alone in today's batches. Every KDA state and conv carry,
// every MLA cache row, the positions, tokens and the logits of row k - 1,
// memcmp, for k in the first sub-batch, on a sub-batch boundary, in the last,
// k = 1, N - 1 and N; in memory and spilled, with sub-batches shorter than
// the chunk and a pass of fewer rows than a batch; two sequences in one pass
// (a server's), one with two captures. The pass's own results do not change.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/thread_pool.h"
#include "io/spill_file.h"
#include "model/forward_pass.h"
#include "model/state_capture.h"
#include "model_fixture.h"
#include "same_state.h"

namespace k3 {
namespace {

using test::TinyModel;

std::vector<int32_t> prompt(size_t n, uint32_t salt = 17) {
  std::vector<int32_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>((i * 2654435761u + salt) % 8192);
  return ids;
}

using test::same_bits;
using test::ScratchDir;

void expect_same_state(const SequenceState& want, const SequenceState& got, const std::string& what) {
  const ModelConfig& c = TinyModel::get().config;
  EXPECT_EQ(want.positions, got.positions) << what;
  EXPECT_EQ(want.tokens, got.tokens) << what;
  ASSERT_EQ(want.layers.size(), got.layers.size()) << what;
  for (size_t i = 0; i < want.layers.size(); ++i) {
    const LayerState &x = want.layers[i], &y = got.layers[i];
    if (c.is_kda_layer(static_cast<int>(i))) {
      EXPECT_TRUE(same_bits(x.kda.S, y.kda.S)) << what << ": KDA state of layer " << i;
      EXPECT_TRUE(same_bits(x.kda.conv_q, y.kda.conv_q) && same_bits(x.kda.conv_k, y.kda.conv_k) &&
                  same_bits(x.kda.conv_v, y.kda.conv_v))
          << what << ": conv carries of layer " << i;
    } else {
      EXPECT_FALSE(x.mla.latent.empty()) << what << ": layer " << i;
      EXPECT_TRUE(same_bits(x.mla.latent, y.mla.latent)) << what << ": MLA cache of layer " << i;
    }
  }
}

// How the pass is cut: rows per batch, chunk, sub-batch, spilled or not.
struct Shape {
  size_t batch, chunk, sub;
  bool spill;
  std::string name() const {
    return "batch " + std::to_string(batch) + ", chunk " + std::to_string(chunk) + ", sub-batch " +
           std::to_string(sub) + (spill ? ", spilled" : "");
  }
};

std::unique_ptr<ForwardPass> engine_of(const Shape& shape, ThreadPool& pool, const ScratchDir& dir) {
  TinyModel& m = TinyModel::get();
  auto engine = std::make_unique<ForwardPass>(m.config, *m.weights, pool);
  engine->set_max_batch(shape.batch);
  engine->set_chunk(shape.chunk);
  engine->set_chunk_sub_batch(shape.sub);
  if (shape.spill) engine->set_spill(std::make_unique<SpillFile>(dir.path()));
  return engine;
}

struct Evaluated {
  SequenceState state;
  std::vector<float> logits;  // of the last id
};

// `before` then `ids` run alone in today's batches of 256 rows: what a pass
// ending after `ids` leaves.
Evaluated alone(const std::vector<int32_t>& before, const std::vector<int32_t>& ids) {
  TinyModel& m = TinyModel::get();
  ThreadPool pool(1);
  ForwardPass engine(m.config, *m.weights, pool);
  Evaluated e;
  engine.reset(e.state);
  e.logits.resize(static_cast<size_t>(m.config.vocab_size));
  if (!before.empty()) engine.forward(e.state, before, LogitRows::kLast, e.logits.data());
  engine.forward(e.state, ids, LogitRows::kLast, e.logits.data());
  return e;
}

std::vector<int32_t> head(const std::vector<int32_t>& ids, size_t k) { return {ids.begin(), ids.begin() + k}; }

TEST(StateCapture, EqualsAPassEndingThereForEveryRowAndCut) {
  const std::vector<int32_t> ids = prompt(75);
  const Evaluated whole = alone({}, ids);
  const size_t vocab = TinyModel::get().config.vocab_size;
  ScratchDir dir;
  // Sub-batches of 8 (k = 5 inside the first, 8 and 16 on boundaries, 74
  // in the last), of 16 above a batch of 3, the whole chunk, spilled, and
  // one sub-batch with fewer rows than a batch (a pass that runs as a chunk
  // only because it captures).
  const std::vector<Shape> shapes = {{8, 75, 0, false}, {3, 75, 16, false}, {3, 75, 75, false},
                                     {8, 75, 0, true},  {3, 75, 16, true},  {256, 0, 0, false}};
  for (const Shape& shape : shapes) {
    ThreadPool pool(2);
    const std::unique_ptr<ForwardPass> engine = engine_of(shape, pool, dir);
    for (size_t k : {1, 5, 8, 16, 40, 74, 75}) {
      const std::string what = shape.name() + ", capture at " + std::to_string(k);
      SequenceState s;
      engine->reset(s);
      SequenceState* one = &s;
      const std::span<const int32_t> span(ids);
      std::vector<float> logits(vocab);
      StateCapture cap{0, k, {}, {}};
      engine->forward_sequences_last(std::span<SequenceState* const>(&one, 1),
                                     std::span<const std::span<const int32_t>>(&span, 1), logits.data(),
                                     std::span<StateCapture>(&cap, 1));
      const Evaluated want = alone({}, head(ids, k));
      expect_same_state(want.state, cap.state, what);
      EXPECT_TRUE(same_bits(want.logits, cap.logits)) << what << ": the logits of the captured row";
      // The pass itself is as without a capture.
      expect_same_state(whole.state, s, what + " (the pass)");
      EXPECT_TRUE(same_bits(whole.logits, logits)) << what << ": the pass's logits";
      for (size_t i = 0; i < s.layers.size(); ++i) {
        if (!TinyModel::get().config.is_kda_layer(static_cast<int>(i))) {
          EXPECT_NE(s.layers[i].mla.generation, cap.state.layers[i].mla.generation)
              << what << ": the captured MLA cache of layer " << i << " is a cache of its own";
        }
      }
    }
  }
}

// A server's pass: a sequence continuing after earlier ids and a new one,
// the second with two captures (a system prompt's end and a chat's kept
// prefix), each equal to its sequence run alone up to there.
TEST(StateCapture, TwoSequencesInOnePass) {
  const std::vector<int32_t> earlier = prompt(11, 5), a = prompt(30, 99), b = prompt(45, 7);
  const size_t vocab = TinyModel::get().config.vocab_size;
  ScratchDir dir;
  for (const Shape& shape : {Shape{8, 96, 0, false}, Shape{4, 96, 12, true}}) {
    ThreadPool pool(2);
    const std::unique_ptr<ForwardPass> engine = engine_of(shape, pool, dir);
    SequenceState sa, sb;
    engine->reset(sa);
    engine->reset(sb);
    std::vector<float> logits(2 * vocab);
    SequenceState* one = &sa;
    const std::span<const int32_t> first(earlier);
    engine->forward_sequences_last(std::span<SequenceState* const>(&one, 1),
                                   std::span<const std::span<const int32_t>>(&first, 1), logits.data());
    SequenceState* both[] = {&sa, &sb};
    const std::span<const int32_t> spans[] = {a, b};
    std::vector<StateCapture> caps = {{1, 44, {}, {}}, {0, 10, {}, {}}, {1, 20, {}, {}}};
    engine->forward_sequences_last(both, spans, logits.data(), caps);
    const std::string what = shape.name();
    expect_same_state(alone(earlier, head(a, 10)).state, caps[1].state, what + ": the first sequence at 10");
    EXPECT_TRUE(same_bits(alone(earlier, head(a, 10)).logits, caps[1].logits)) << what;
    for (const size_t at : {0, 2}) {
      const Evaluated want = alone({}, head(b, caps[at].rows));
      expect_same_state(want.state, caps[at].state, what + ": the second at " + std::to_string(caps[at].rows));
      EXPECT_TRUE(same_bits(want.logits, caps[at].logits)) << what;
    }
    const Evaluated wa = alone(earlier, a), wb = alone({}, b);
    expect_same_state(wa.state, sa, what + ": the first sequence's pass");
    expect_same_state(wb.state, sb, what + ": the second sequence's pass");
    EXPECT_TRUE(std::memcmp(logits.data(), wa.logits.data(), vocab * sizeof(float)) == 0 &&
                std::memcmp(logits.data() + vocab, wb.logits.data(), vocab * sizeof(float)) == 0)
        << what << ": the pass's logits";
  }
}

TEST(StateCapture, OutsideTheSequencesRowsIsRefused) {
  TinyModel& m = TinyModel::get();
  ThreadPool pool(1);
  ForwardPass engine(m.config, *m.weights, pool);
  engine.set_max_batch(4);
  engine.set_chunk(8);
  const std::vector<int32_t> ids = prompt(6), longer = prompt(9);
  std::vector<float> logits(static_cast<size_t>(m.config.vocab_size));
  for (const auto& [rows, sequence, what] : {std::tuple<size_t, size_t, const char*>{0, 0, "no rows"},
                                             {7, 0, "past the sequence's rows"},
                                             {3, 1, "no such sequence"}}) {
    SequenceState s;
    engine.reset(s);
    SequenceState* one = &s;
    const std::span<const int32_t> span(ids);
    StateCapture cap{sequence, rows, {}, {}};
    try {
      engine.forward_sequences_last(std::span<SequenceState* const>(&one, 1),
                                    std::span<const std::span<const int32_t>>(&span, 1), logits.data(),
                                    std::span<StateCapture>(&cap, 1));
      ADD_FAILURE() << what << ": accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kInternal) << what;
      EXPECT_EQ(s.positions, 0) << what << ": the state is untouched";
    }
  }
  // More rows than one read of the weights covers: a capture cannot be cut in two passes.
  SequenceState s;
  engine.reset(s);
  SequenceState* one = &s;
  const std::span<const int32_t> span(longer);
  StateCapture cap{0, 3, {}, {}};
  EXPECT_THROW(engine.forward_sequences_last(std::span<SequenceState* const>(&one, 1),
                                             std::span<const std::span<const int32_t>>(&span, 1), logits.data(),
                                             std::span<StateCapture>(&cap, 1)),
               Error);
}

}  // namespace
}  // namespace k3
