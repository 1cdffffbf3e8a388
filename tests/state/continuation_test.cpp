// Saving the engine's sequence state to a file and continuing from it, on the
// tiny checkpoint: the continued logits are bit-identical to one run over the
// whole sequence, whichever thread counts the two halves use.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "../model/model_fixture.h"
#include "common/error.h"
#include "common/thread_pool.h"
#include "model/forward_pass.h"
#include "state/continuation.h"

namespace fs = std::filesystem;
using namespace k3;
using test::Golden;
using test::TinyModel;

namespace {

std::vector<float> logits_of(ForwardPass& engine, SequenceState& state, std::span<const int32_t> ids) {
  std::vector<float> out(ids.size() * static_cast<size_t>(engine.config().vocab_size));
  engine.forward(state, ids, LogitRows::kAll, out.data());
  return out;
}

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("k3-cont-" + std::to_string(::getpid()) + "-" + name)).string();
}

}  // namespace

TEST(Continuation, SplitRunsThroughStateFilesEqualOneRun) {
  TinyModel& m = TinyModel::get();
  const std::vector<int32_t>& ids = Golden::get().tf_ids;  // 32 ids
  const size_t vocab = m.config.vocab_size;
  const ModelIdentity identity = ModelIdentity::of(m.config, *m.checkpoint);

  std::vector<float> whole;
  {
    ThreadPool pool(1);
    ForwardPass engine(m.config, *m.weights, pool);
    SequenceState state;
    engine.reset(state);
    whole = logits_of(engine, state, ids);
  }

  // Three pieces (the splits fall inside AttnRes blocks and MLA/KDA layers
  // alike), each run in a new engine with another thread count, passing the
  // state on through a file.
  const std::vector<size_t> cuts = {0, 5, 19, ids.size()};
  const std::vector<int> threads = {2, 1, 3};
  const std::string path = temp_path("split.k3state");
  for (size_t piece = 0; piece + 1 < cuts.size(); ++piece) {
    ThreadPool pool(threads[piece]);
    ForwardPass engine(m.config, *m.weights, pool);
    SequenceState state;
    if (piece == 0) {
      engine.reset(state);
    } else {
      ConversationState loaded = load_conversation(path, identity);
      EXPECT_EQ(loaded.sequence.positions, static_cast<int64_t>(cuts[piece]));
      EXPECT_EQ(loaded.sequence.tokens, std::vector<int32_t>(ids.begin(), ids.begin() + cuts[piece]));
      state = std::move(loaded.sequence);
    }
    std::span<const int32_t> part(ids.data() + cuts[piece], cuts[piece + 1] - cuts[piece]);
    std::vector<float> got = logits_of(engine, state, part);
    ASSERT_EQ(std::memcmp(got.data(), whole.data() + cuts[piece] * vocab, got.size() * sizeof(float)), 0)
        << "piece " << piece << " differs from the single run";
    save_conversation(path, identity, std::move(state), {}, SamplingParams{}, {});
  }
  ConversationState end = load_conversation(path, identity);
  EXPECT_EQ(end.sequence.tokens, ids);
  EXPECT_FALSE(end.sampling.has_value());
  fs::remove(path);
}

TEST(Continuation, SavedLogitsAndPendingIdsRoundTrip) {
  TinyModel& m = TinyModel::get();
  const ModelIdentity identity = ModelIdentity::of(m.config, *m.checkpoint);
  ThreadPool pool(2);
  ForwardPass engine(m.config, *m.weights, pool);
  SequenceState state;
  engine.reset(state);
  const std::vector<int32_t> prompt = Golden::get().greedy_prompt;
  std::vector<float> last(m.config.vocab_size);
  engine.forward(state, prompt, LogitRows::kLast, last.data());

  const std::string path = temp_path("logits.k3state");
  SamplingParams p;
  p.temperature = 0.8;
  p.seed = 77;
  // Nothing pending: the last logits are kept.
  save_conversation(path, identity, SequenceState(state), {}, p, last);
  ConversationState a = load_conversation(path, identity);
  ASSERT_EQ(a.last_logits.size(), last.size());
  EXPECT_EQ(std::memcmp(a.last_logits.data(), last.data(), last.size() * 4), 0);
  ASSERT_TRUE(a.sampling.has_value());
  EXPECT_EQ(a.sampling->seed, 77u);
  // With a pending id the logits are not stored (the continuation evaluates it).
  save_conversation(path, identity, std::move(state), {42}, SamplingParams{}, last);
  ConversationState b = load_conversation(path, identity);
  EXPECT_TRUE(b.last_logits.empty());
  EXPECT_EQ(b.pending, std::vector<int32_t>{42});
  EXPECT_FALSE(b.sampling.has_value());
  fs::remove(path);
}

TEST(Continuation, FlagsOverrideSavedSampling) {
  SamplingParams saved;
  saved.temperature = 0.7;
  saved.top_k = 40;
  saved.top_p = 0.9;
  saved.min_p = 0.1;
  saved.seed = 5;
  SamplingOverrides none;
  SamplingParams p = resolve_sampling(saved, none);
  EXPECT_EQ(p.temperature, 0.7);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_EQ(p.seed, 5u);
  SamplingOverrides some;
  some.temperature = 0.0;
  some.seed = 9;
  p = resolve_sampling(saved, some);
  EXPECT_EQ(p.temperature, 0.0);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_EQ(p.seed, 9u);
  p = resolve_sampling(std::nullopt, none);
  EXPECT_TRUE(p.greedy());
  some.temperature = -1.0;
  EXPECT_THROW(resolve_sampling(saved, some), k3::Error);
}
