// The generation session against the tiny checkpoint's goldens and against
// exact identities: greedy ids equal the golden ids; recompute, continuing a
// sequence (in memory, through a state file, as a chat turn) and rolling back
// to a save point give memcmp-identical logits to one plain run.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <vector>

#include "common/error.h"
#include "generate/generation_session.h"
#include "kernels/thread_pool.h"
#include "model/engine.h"
#include "state/continuation.h"
#include "../model/model_fixture.h"

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

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class SessionTest : public ::testing::Test {
 protected:
  test::TinyModel& m = test::TinyModel::get();
  const test::Golden& g = test::Golden::get();
  ThreadPool pool{2};
  Engine engine{m.config, *m.weights, pool};

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
  EXPECT_TRUE(same_floats(a.current_row(), b.current_row()));
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
    EXPECT_TRUE(same_floats(one.current_row(), split.current_row()));
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
  EXPECT_TRUE(same_floats(one.current_row(), second.current_row()));
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
  EXPECT_TRUE(same_floats(one.current_row(), chat.current_row()));
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
  EXPECT_TRUE(same_floats(row, s.current_row()));
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
  EXPECT_EQ(s.generate(5, [&](int32_t id) { ids.push_back(id); }, [] { return true; }), GenerationEnd::kInterrupted);
  EXPECT_TRUE(ids.empty());
}

TEST_F(SessionTest, SampleWithoutLogitsIsAnError) {
  GenerationSession s(engine, options());
  s.reset();
  EXPECT_FALSE(s.can_generate());
  EXPECT_THROW(s.sample(), Error);
}

}  // namespace
}  // namespace k3
