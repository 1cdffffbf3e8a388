// The generation session against the tiny checkpoint's goldens and against
// exact identities: greedy ids equal the golden ids; recompute, continuing a
// sequence (in memory, through a state file, as a chat turn) and rolling back
// to a save point give memcmp-identical logits to one plain run.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <vector>

#include "../model/model_fixture.h"
#include "common/error.h"
#include "common/thread_pool.h"
#include "generate/generation_session.h"
#include "lib/test_util.h"
#include "model/forward_pass.h"
#include "state/continuation.h"

namespace k3 {
namespace {

struct Generated {
  std::vector<int32_t> ids;
  GenerationEnd end = GenerationEnd::kLength;
};

Generated generate(GenerationSession& s, int64_t n) {
  Generated r;
  r.end = s.generate(n, [&](int32_t id) { r.ids.push_back(id); });
  return r;
}

class SessionTest : public ::testing::Test {
 protected:
  test::TinyModel& m = test::TinyModel::get();
  const test::Golden& g = test::Golden::get();
  ThreadPool pool{2};
  ForwardPass engine{m.config, *m.weights, pool};

  GenerationOptions options(bool log = true) {
    GenerationOptions o;
    o.stop = StopConditions(m.config.eos_token_ids, {}, /*ignore_eos=*/true);
    o.log_logits = log;
    return o;
  }
  GenerationOptions sampled() {
    GenerationOptions o = options();
    o.sampling.temperature = 0.9;
    o.sampling.top_p = 0.95;
    o.sampling.seed = 11;
    return o;
  }
};

TEST_F(SessionTest, GreedyIdsEqualGolden) {
  GenerationSession s(engine, options(false));
  s.reset();
  s.feed(g.greedy_prompt);
  const Generated r = generate(s, static_cast<int64_t>(g.greedy_ids.size()));
  EXPECT_EQ(r.ids, g.greedy_ids);
  EXPECT_EQ(r.end, GenerationEnd::kLength);
  const GenerationCounters& c = s.counters();
  EXPECT_EQ(c.generated, static_cast<int64_t>(g.greedy_ids.size()));
  EXPECT_EQ(c.decode_steps, static_cast<int64_t>(g.greedy_ids.size()) - 1);  // the last id is not evaluated
  EXPECT_EQ(c.weight_passes, 1 + c.decode_steps);
  EXPECT_EQ(c.prompt_ids, static_cast<int64_t>(g.greedy_prompt.size()));
  EXPECT_EQ(s.pending(), std::vector<int32_t>{g.greedy_ids.back()});
}

TEST_F(SessionTest, RecomputeLogsTheSameBits) {
  GenerationSession a(engine, options()), b(engine, [&] {
    GenerationOptions o = options();
    o.recompute = true;
    return o;
  }());
  a.reset();
  b.reset();
  a.feed(g.greedy_prompt);
  b.feed(g.greedy_prompt);
  EXPECT_EQ(generate(a, 8).ids, generate(b, 8).ids);
  ASSERT_EQ(a.logits_log().rows(), g.greedy_prompt.size() + 7);
  EXPECT_TRUE(test::same_bits(a.current_row(), b.current_row()));
  EXPECT_EQ(b.counters().decode_steps, 0);
}

TEST_F(SessionTest, ContinuingEqualsOneRunGreedyAndSampled) {
  for (const GenerationOptions& o : {options(), sampled()}) {
    GenerationSession one(engine, o), split(engine, o);
    one.reset();
    split.reset();
    one.feed(g.greedy_prompt);
    split.feed(g.greedy_prompt);
    const Generated whole = generate(one, 12);
    Generated first = generate(split, 5);
    const Generated second = generate(split, 7);  // evaluates the pending id first
    first.ids.insert(first.ids.end(), second.ids.begin(), second.ids.end());
    EXPECT_EQ(first.ids, whole.ids);
    EXPECT_TRUE(test::same_bits(one.current_row(), split.current_row()));
    EXPECT_EQ(one.logits_log().rows(), split.logits_log().rows());
  }
}

TEST_F(SessionTest, StateFileContinuationEqualsOneRun) {
  const GenerationOptions o = sampled();
  const ModelIdentity identity = ModelIdentity::of(m.config, *m.checkpoint);
  char path[] = "/tmp/k3-session-test-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  GenerationSession one(engine, o), first(engine, o), second(engine, o);
  one.reset();
  one.feed(g.greedy_prompt);
  const Generated whole = generate(one, 10);
  first.reset();
  first.feed(g.greedy_prompt);
  Generated a = generate(first, 4);
  first.save_conversation(path, identity);
  second.restore(load_conversation(path, identity));
  ::unlink(path);
  second.feed({});  // the pending id
  const Generated b = generate(second, 6);
  a.ids.insert(a.ids.end(), b.ids.begin(), b.ids.end());
  EXPECT_EQ(a.ids, whole.ids);
  EXPECT_TRUE(test::same_bits(one.current_row(), second.current_row()));
}

TEST_F(SessionTest, ChatTurnEqualsOneRunOverTheConversation) {
  const std::vector<int32_t> user2 = {g.tf_ids.begin(), g.tf_ids.begin() + 6};
  GenerationSession chat(engine, options(false));
  chat.reset();
  chat.feed(g.greedy_prompt);
  const Generated turn1 = generate(chat, 5);
  chat.feed(user2);  // evaluates turn 1's last id and the new ids
  const Generated turn2 = generate(chat, 5);

  std::vector<int32_t> conversation = g.greedy_prompt;
  conversation.insert(conversation.end(), turn1.ids.begin(), turn1.ids.end());
  conversation.insert(conversation.end(), user2.begin(), user2.end());
  GenerationSession one(engine, options(false));
  one.reset();
  one.feed(conversation);
  EXPECT_EQ(generate(one, 5).ids, turn2.ids);
  EXPECT_TRUE(test::same_bits(one.current_row(), chat.current_row()));
}

TEST_F(SessionTest, RollbackToASavePointRegeneratesTheSame) {
  GenerationSession s(engine, options());
  s.reset();
  s.feed(g.greedy_prompt);
  GenerationSession::SavePoint point = s.mark();
  const std::vector<float> row = s.current_row();
  const Generated a = generate(s, 9);
  s.rollback(std::move(point));
  EXPECT_EQ(s.logits_log().rows(), g.greedy_prompt.size());
  EXPECT_TRUE(test::same_bits(row, s.current_row()));
  EXPECT_TRUE(s.pending().empty());
  EXPECT_EQ(generate(s, 9).ids, a.ids);
}

TEST_F(SessionTest, StopIdEndsAndStaysPending) {
  const int32_t stop_id = g.greedy_ids[3];
  size_t first = 0;
  while (g.greedy_ids[first] != stop_id) ++first;
  GenerationOptions o = options();
  o.stop = StopConditions({}, {stop_id}, true);
  GenerationSession s(engine, o);
  s.reset();
  s.feed(g.greedy_prompt);
  const Generated r = generate(s, 20);
  EXPECT_EQ(r.end, GenerationEnd::kStop);
  EXPECT_EQ(r.ids, std::vector<int32_t>(g.greedy_ids.begin(), g.greedy_ids.begin() + first + 1));
  EXPECT_EQ(s.pending(), std::vector<int32_t>{stop_id});
}

TEST_F(SessionTest, InterruptedBeforeTheFirstId) {
  GenerationSession s(engine, options());
  s.reset();
  s.feed(g.greedy_prompt);
  std::vector<int32_t> ids;
  EXPECT_EQ(s.generate(
                5, [&](int32_t id) { ids.push_back(id); }, [] { return true; }),
            GenerationEnd::kInterrupted);
  EXPECT_TRUE(ids.empty());
}

// Drafts from a script: the ids at given positions of a reference output,
// some of them wrong, so verification both keeps and rolls back rows.
class ScriptedDrafts : public DraftSource {
 public:
  ScriptedDrafts(std::vector<int32_t> truth, size_t prompt, size_t wrong_every)
      : truth_(std::move(truth)), prompt_(prompt), wrong_every_(wrong_every) {}
  std::vector<int32_t> propose(std::span<const int32_t> context, size_t max) override {
    std::vector<int32_t> d;
    for (size_t i = context.size() - prompt_; i < truth_.size() && d.size() < max; ++i) {
      const bool wrong = wrong_every_ && (i % wrong_every_) == wrong_every_ - 1;
      d.push_back(wrong ? (truth_[i] + 1) % 8448 : truth_[i]);
    }
    return d;
  }

 private:
  std::vector<int32_t> truth_;
  size_t prompt_, wrong_every_;
};

TEST_F(SessionTest, DraftsGiveTheSameIdsLogitsAndState) {
  for (const GenerationOptions& base : {options(), sampled()}) {
    GenerationSession plain(engine, base);
    plain.reset();
    plain.feed(g.greedy_prompt);
    const Generated want = generate(plain, 20);
    for (size_t wrong_every : {0, 1, 3, 7}) {
      for (size_t n : {1, 4, 8}) {
        GenerationOptions o = base;
        o.max_drafts = n;
        ScriptedDrafts drafts(want.ids, g.greedy_prompt.size(), wrong_every);
        GenerationSession s(engine, o);
        s.set_draft_source(&drafts);
        s.reset();
        s.feed(g.greedy_prompt);
        const Generated got = generate(s, 20);
        EXPECT_EQ(got.ids, want.ids) << "wrong_every " << wrong_every << " n " << n;
        EXPECT_TRUE(test::same_bits(plain.current_row(), s.current_row()));
        EXPECT_EQ(plain.pending(), s.pending());
        EXPECT_EQ(plain.state().tokens, s.state().tokens);
        ASSERT_EQ(plain.logits_log().rows(), s.logits_log().rows());
        const GenerationCounters& c = s.counters();
        EXPECT_GT(c.drafts_proposed, 0);
        if (wrong_every == 0) {
          EXPECT_EQ(c.drafts_accepted, c.drafts_proposed);
          EXPECT_LT(c.generate_passes, plain.counters().generate_passes);
        } else if (wrong_every == 1) {
          EXPECT_EQ(c.drafts_accepted, 0);
        }
      }
    }
  }
}

// interrupted() is asked between two ids also when the ids come from one
// verification pass (k3-chat ends a reply there once the message is closed):
// the ids, the evaluated state, the current row and the logged rows are those
// of the run without drafts stopped at the same id.
TEST_F(SessionTest, InterruptedWithinAVerifiedDraftEqualsThePlainRun) {
  GenerationSession full(engine, options());
  full.reset();
  full.feed(g.greedy_prompt);
  const Generated truth = generate(full, 20);
  for (size_t stop_after : {1, 3, 4, 6, 9}) {
    auto until = [stop_after](const std::vector<int32_t>& ids) {
      return [&ids, stop_after] { return ids.size() >= stop_after; };
    };
    GenerationSession plain(engine, options());
    plain.reset();
    plain.feed(g.greedy_prompt);
    std::vector<int32_t> want;
    EXPECT_EQ(plain.generate(
                  20, [&](int32_t id) { want.push_back(id); }, until(want)),
              GenerationEnd::kInterrupted);
    ASSERT_EQ(want.size(), stop_after);
    for (size_t n : {1, 3, 4, 8}) {
      GenerationOptions o = options();
      o.max_drafts = n;
      ScriptedDrafts drafts(truth.ids, g.greedy_prompt.size(), 0);
      GenerationSession s(engine, o);
      s.set_draft_source(&drafts);
      s.reset();
      s.feed(g.greedy_prompt);
      std::vector<int32_t> got;
      EXPECT_EQ(s.generate(
                    20, [&](int32_t id) { got.push_back(id); }, until(got)),
                GenerationEnd::kInterrupted);
      EXPECT_EQ(got, want) << "stop after " << stop_after << ", drafts " << n;
      EXPECT_EQ(s.state().tokens, plain.state().tokens) << "stop after " << stop_after << ", drafts " << n;
      EXPECT_EQ(s.state().positions, plain.state().positions);
      EXPECT_EQ(s.pending(), plain.pending());
      EXPECT_TRUE(test::same_bits(s.current_row(), plain.current_row()))
          << "stop after " << stop_after << ", drafts " << n;
      ASSERT_EQ(s.logits_log().rows(), plain.logits_log().rows());
      if (stop_after > 1) {
        EXPECT_GT(s.counters().drafts_accepted, 0);  // ids came from verified drafts
      }
      // Going on from there gives the plain run's next ids.
      const Generated more = generate(s, 4);
      EXPECT_EQ(more.ids, std::vector<int32_t>(truth.ids.begin() + stop_after, truth.ids.begin() + stop_after + 4));
    }
  }
}

// Ctrl-C during a weight pass (set_stop_within_pass): the pass ends after
// the layer where the flag was seen, not at the next id; with keep_state the
// sequence is exactly what it was before that pass (state memcmp-equal, the
// id still pending), so going on gives the ids and logits of one plain run.
TEST_F(SessionTest, StopWithinAPassKeepsTheStateOfBeforeThePass) {
  const int layers = m.config.num_hidden_layers;
  for (size_t drafts : {0, 3}) {
    GenerationSession full(engine, options());
    full.reset();
    full.feed(g.greedy_prompt);
    const Generated truth = generate(full, 12);
    for (int stop_layer : {1, 5, layers - 2}) {
      GenerationOptions o = options();
      o.max_drafts = drafts;
      ScriptedDrafts source(truth.ids, g.greedy_prompt.size(), 0);
      GenerationSession s(engine, o);
      if (drafts) s.set_draft_source(&source);
      s.set_stop_within_pass(true, /*keep_state=*/true);
      s.reset();
      s.feed(g.greedy_prompt);
      const Generated first = generate(s, 3);
      const GenerationSession::SavePoint before = s.mark();
      // The flag turns true after `stop_layer` layers of the next pass: the
      // stop is polled once per layer, so the poll count says where it stopped.
      int polls = 0;
      std::vector<int32_t> got;
      const GenerationEnd end = s.generate(
          9, [&](int32_t id) { got.push_back(id); }, [&] { return ++polls > stop_layer; });
      EXPECT_EQ(end, GenerationEnd::kInterrupted);
      EXPECT_TRUE(got.empty()) << "no id is sampled from a stopped pass";
      EXPECT_EQ(polls, stop_layer + 1) << "stopped at the first poll that saw the flag (drafts " << drafts << ")";
      EXPECT_EQ(s.pending(), before.pending);
      EXPECT_EQ(s.state().positions, before.state.positions);
      EXPECT_EQ(s.state().tokens, before.state.tokens);
      for (int i = 0; i < layers; ++i) {
        const LayerState& a = s.state().layers[i];
        const LayerState& b = before.state.layers[i];
        EXPECT_TRUE(test::same_bits(a.kda.S, b.kda.S) && test::same_bits(a.kda.conv_q, b.kda.conv_q) &&
                    test::same_bits(a.kda.conv_k, b.kda.conv_k) && test::same_bits(a.kda.conv_v, b.kda.conv_v) &&
                    test::same_bits(a.mla.latent, b.mla.latent))
            << "layer " << i << " stop after " << stop_layer << ", drafts " << drafts;
      }
      // Going on (the stop no longer asked) gives the plain run's ids and row.
      const Generated more = generate(s, 9);
      std::vector<int32_t> all = first.ids;
      all.insert(all.end(), more.ids.begin(), more.ids.end());
      EXPECT_EQ(all, truth.ids) << "stop after " << stop_layer << ", drafts " << drafts;
      EXPECT_TRUE(test::same_bits(s.current_row(), full.current_row()));
    }
  }
}

TEST_F(SessionTest, PromptLookupDraftsLeaveTheOutputUnchanged) {
  // The model's own continuation placed in the prompt (prompt + G + prompt +
  // G[0..3)), and lookup from 1-id matches: whatever it proposes, the output
  // is that of the plain run.
  GenerationSession plain(engine, options());
  plain.reset();
  plain.feed(g.greedy_prompt);
  const Generated first = generate(plain, 12);
  std::vector<int32_t> prompt = g.greedy_prompt;
  prompt.insert(prompt.end(), first.ids.begin(), first.ids.end());
  prompt.insert(prompt.end(), g.greedy_prompt.begin(), g.greedy_prompt.end());
  prompt.insert(prompt.end(), first.ids.begin(), first.ids.begin() + 3);
  GenerationSession a(engine, options()), b(engine, [&] {
    GenerationOptions o = options();
    o.max_drafts = 6;
    return o;
  }());
  NgramDrafts lookup(1);
  b.set_draft_source(&lookup);
  a.reset();
  b.reset();
  a.feed(prompt);
  b.feed(prompt);
  EXPECT_EQ(generate(a, 16).ids, generate(b, 16).ids);
  EXPECT_TRUE(test::same_bits(a.current_row(), b.current_row()));
  EXPECT_EQ(a.logits_log().rows(), b.logits_log().rows());
}

TEST(NgramDrafts, ProposesWhatFollowedTheLongestMatchOnly) {
  NgramDrafts d;
  // ... 1 2 3 4 5 6 ... 1 2 3 -> 4 (match length 3: one draft), more with a streak.
  const std::vector<int32_t> ctx = {9, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3};
  EXPECT_EQ(d.propose(ctx, 8), (std::vector<int32_t>{4}));
  d.verified(1, 1);
  EXPECT_EQ(d.propose(ctx, 8), (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(d.propose(ctx, 1), (std::vector<int32_t>{4}));
  // No match of 3 ids: nothing.
  EXPECT_TRUE(d.propose(std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7}, 8).empty());
  // A rejected first draft raises the required match length.
  NgramDrafts e;
  e.verified(2, 0);
  EXPECT_TRUE(e.propose(ctx, 8).empty());  // needs 4 now; only 3 match
  const std::vector<int32_t> longer = {0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3};
  EXPECT_EQ(e.propose(longer, 8), (std::vector<int32_t>{4}));
}

TEST(PredictedDrafts, RealignsAfterSubstitutionsAndSkips) {
  PredictedDrafts p({10, 11, 12, 13, 14, 15, 16, 17});
  EXPECT_EQ(p.propose({}, 4), (std::vector<int32_t>{10}));  // nothing confirmed yet: one id
  p.generated(10);
  EXPECT_EQ(p.propose({}, 4), (std::vector<int32_t>{11, 12, 13, 14}));
  p.generated(99);  // substituted for 11
  EXPECT_EQ(p.propose({}, 4), (std::vector<int32_t>{12}));
  p.generated(12);
  p.generated(14);  // 13 skipped
  EXPECT_EQ(p.aligned_at(), 5u);
  p.generated(15);
  EXPECT_EQ(p.propose({}, 8), (std::vector<int32_t>{16, 17}));
  PredictedDrafts wrong({1, 2, 3, 4, 5, 6});
  wrong.generated(50);
  wrong.generated(51);
  EXPECT_TRUE(wrong.propose({}, 4).empty());  // two misses in a row: stop proposing
}

TEST_F(SessionTest, SampleWithoutLogitsIsAnError) {
  GenerationSession s(engine, options());
  s.reset();
  EXPECT_FALSE(s.can_generate());
  EXPECT_THROW(s.sample(), Error);
}

}  // namespace
}  // namespace k3
