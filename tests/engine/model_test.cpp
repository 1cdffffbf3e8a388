// The engine facade against the tiny checkpoint's goldens and exact
// identities: a Model opened resident or streamed generates the golden ids;
// step() and generate() agree; prefix reuse (going on, going back to the save
// point, starting over) gives memcmp-identical logits to a fresh run over the
// same prompt and says how many ids it reused; sessions decoded together
// give what each gives alone; the per-pass accounting counts the passes; a
// plan that does not fit is refused with kResource before loading; the plan
// text goes only to the log given.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <span>
#include <sstream>
#include <vector>

#include "../model/model_fixture.h"
#include "common/error.h"
#include "engine/model.h"
#include "engine/session.h"
#include "lib/test_util.h"
#include "model/forward_pass.h"
#include "state/continuation.h"

namespace k3 {
namespace {

GenerationOptions greedy(const Model& m) {
  GenerationOptions o;
  o.stop = StopConditions(m.config().eos_token_ids, {}, /*ignore_eos=*/true);
  return o;
}

std::vector<int32_t> generate(Session& s, int64_t n) {
  std::vector<int32_t> ids;
  s.generate(n, [&](int32_t id) { ids.push_back(id); });
  return ids;
}

// The logits after evaluating `prompt` in a fresh greedy session: what a
// reused or rolled-back session must equal bit for bit.
std::vector<float> fresh_row(Model& model, const std::vector<int32_t>& prompt) {
  Session f = model.session(greedy(model));
  f.prefill(prompt);
  return f.current_row();
}

ModelParams resident() {
  ModelParams p;
  p.threads = 2;
  return p;
}

TEST(Model, ResidentSessionGeneratesTheGoldenIds) {
  const test::Golden& g = test::Golden::get();
  auto model = Model::open(test::tiny_dir(), resident());
  EXPECT_FALSE(model->counters().streaming);
  Session s = model->session(greedy(*model));
  s.prefill(g.greedy_prompt);
  EXPECT_EQ(generate(s, static_cast<int64_t>(g.greedy_ids.size())), g.greedy_ids);
  std::vector<int32_t> all = g.greedy_prompt;
  all.insert(all.end(), g.greedy_ids.begin(), g.greedy_ids.end());
  EXPECT_EQ(s.ids(), all);

  Session stepped = model->session(greedy(*model));
  stepped.prefill(g.greedy_prompt);
  std::vector<int32_t> ids;
  for (size_t i = 0; i < g.greedy_ids.size(); ++i) ids.push_back(stepped.step());
  EXPECT_EQ(ids, g.greedy_ids);
  EXPECT_TRUE(test::same_bits(stepped.current_row(), s.current_row()));
}

TEST(Model, PrefixReuseEqualsAFreshRun) {
  const test::Golden& g = test::Golden::get();
  auto model = Model::open(test::tiny_dir(), resident());
  Session s = model->session(greedy(*model));
  const std::vector<int32_t> p1 = g.greedy_prompt;
  EXPECT_EQ(s.prefill_reusing(p1, p1.size()), 0u);
  const std::vector<int32_t> reply = generate(s, 4);

  // Turn 2 goes on from the reply: everything but its pending last id is reused.
  std::vector<int32_t> p2 = p1;
  p2.insert(p2.end(), reply.begin(), reply.end());
  p2.insert(p2.end(), g.tf_ids.begin(), g.tf_ids.begin() + 5);
  EXPECT_EQ(s.prefill_reusing(p2, p2.size()), p1.size() + reply.size() - 1);
  EXPECT_TRUE(test::same_bits(s.current_row(), fresh_row(*model, p2)));

  // Turn 3 diverges after p2's first ids: back to turn 2's save point only
  // when that point's ids are a prefix; here they are not, and p1's point
  // was replaced, so it starts over.
  std::vector<int32_t> p3(p1.begin(), p1.end() - 1);
  p3.push_back(g.tf_ids[7]);
  const int64_t passes = s.counters().weight_passes;
  EXPECT_EQ(s.prefill_reusing(p3, 3), 0u);
  EXPECT_EQ(s.counters().weight_passes, passes + 1) << "the save point after 3 ids is taken within the one prefill";
  EXPECT_TRUE(test::same_bits(s.current_row(), fresh_row(*model, p3)));
  generate(s, 3);

  // Turn 4 shares p3's first 3 ids (the save point) but not the rest.
  std::vector<int32_t> p4(p3.begin(), p3.begin() + 3);
  p4.insert(p4.end(), g.tf_ids.begin() + 10, g.tf_ids.begin() + 16);
  EXPECT_EQ(s.prefill_reusing(p4, p4.size()), 3u);
  EXPECT_TRUE(test::same_bits(s.current_row(), fresh_row(*model, p4)));
  EXPECT_EQ(s.ids(), p4);
}

// k3-chat's Ctrl-C and /undo: a reply cut within a layer (set_stop_within_pass)
// leaves the sequence part-way; the next turn, which drops that exchange,
// goes back to the save point of the turn before (two are kept) instead of
// starting over, and its logits are a fresh run's bit for bit.
TEST(Model, AReplyCutWithinALayerGoesBackToTheTurnBefore) {
  const test::Golden& g = test::Golden::get();
  auto model = Model::open(test::tiny_dir(), resident());
  Session s = model->session(greedy(*model));
  const std::vector<int32_t> p1 = g.greedy_prompt;
  s.prefill_reusing(p1, p1.size());
  const std::vector<int32_t> reply = generate(s, 3);
  std::vector<int32_t> p2 = p1;
  p2.insert(p2.end(), reply.begin(), reply.end());
  p2.insert(p2.end(), g.tf_ids.begin(), g.tf_ids.begin() + 4);
  s.prefill_reusing(p2, p2.size());

  int polls = 0;
  s.set_stop_within_pass([&] { return ++polls > 3; });  // the first decode pass stops after its 4th layer
  std::vector<int32_t> got;
  EXPECT_EQ(s.generate(5, [&](int32_t id) { got.push_back(id); }), GenerationEnd::kInterrupted);
  EXPECT_TRUE(s.pass_cut());
  EXPECT_EQ(got.size(), 1u);  // sampled from the prompt's row; its pass was cut
  EXPECT_EQ(polls, 4);
  s.set_stop_within_pass(nullptr);

  // The exchange is dropped: p3 is turn 1 and another message.
  std::vector<int32_t> p3(p2.begin(), p2.begin() + static_cast<ptrdiff_t>(p1.size() + reply.size()));
  p3.insert(p3.end(), g.tf_ids.begin() + 6, g.tf_ids.begin() + 11);
  EXPECT_EQ(s.prefill_reusing(p3, p3.size()), p1.size());
  EXPECT_TRUE(test::same_bits(s.current_row(), fresh_row(*model, p3)));
}

// k3-chat's state file: what save_reusable() writes is what the next turn
// goes on from; restored in another session (restore_reusable) the next
// prompt evaluates only its new ids, bit-identical to a fresh run.
TEST(Model, ASavedReusableStateContinuesInAnotherSession) {
  const test::Golden& g = test::Golden::get();
  auto model = Model::open(test::tiny_dir(), resident());
  const ModelIdentity identity = ModelIdentity::of(model->config(), model->checkpoint());
  const std::string path = ::testing::TempDir() + "/reusable.k3s";
  Session s = model->session(greedy(*model));
  const std::vector<int32_t> p1 = g.greedy_prompt;
  s.prefill_reusing(p1, p1.size() - 2);  // the save point before the last two ids
  const std::vector<int32_t> reply = generate(s, 3);
  std::vector<int32_t> next = p1;
  next.insert(next.end(), reply.begin(), reply.end());
  // The sequence itself when it is a prefix of what comes next ...
  EXPECT_EQ(s.save_reusable(path, identity, next), next.size());
  // ... else the save point; nothing when neither is.
  std::vector<int32_t> other(p1.begin(), p1.end() - 1);
  other.push_back(g.tf_ids[3]);
  EXPECT_EQ(s.save_reusable(path + ".point", identity, other), p1.size() - 2);
  EXPECT_EQ(s.save_reusable(path + ".none", identity, g.tf_ids), 0u);
  EXPECT_FALSE(std::filesystem::exists(path + ".none"));

  next.insert(next.end(), g.tf_ids.begin(), g.tf_ids.begin() + 4);
  Session fresh = model->session(greedy(*model));
  fresh.prefill(next);
  Session resumed = model->session(greedy(*model));
  resumed.restore_reusable(load_conversation(path, identity));
  EXPECT_EQ(resumed.prefill_reusing(next, next.size()), p1.size() + reply.size() - 1);  // the last reply id was pending
  EXPECT_TRUE(test::same_bits(resumed.current_row(), fresh.current_row()));
  Session from_point = model->session(greedy(*model));
  from_point.restore_reusable(load_conversation(path + ".point", identity));
  EXPECT_EQ(from_point.prefill_reusing(other, other.size()), p1.size() - 2);
  Session other_fresh = model->session(greedy(*model));
  other_fresh.prefill(other);
  EXPECT_TRUE(test::same_bits(from_point.current_row(), other_fresh.current_row()));
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".point");
}

TEST(Model, SessionsDecodedTogetherEqualEachAlone) {
  const test::Golden& g = test::Golden::get();
  auto model = Model::open(test::tiny_dir(), resident());
  const std::vector<std::vector<int32_t>> prompts = {g.greedy_prompt, {g.tf_ids.begin(), g.tf_ids.begin() + 9}};
  std::vector<std::vector<int32_t>> alone;
  for (const auto& p : prompts) {
    Session s = model->session(greedy(*model));
    s.prefill(p);
    alone.push_back(generate(s, 6));
  }
  std::vector<Session> sessions;
  sessions.reserve(prompts.size());
  std::vector<Session*> ptrs;
  for (const auto& p : prompts) {
    sessions.push_back(model->session(greedy(*model)));
    sessions.back().prefill(p);
    ptrs.push_back(&sessions.back());
  }
  std::vector<std::vector<int32_t>> together(prompts.size());
  size_t ends = 0;
  const int64_t passes = model->decode_together(
      ptrs, 6, [&](size_t i, int32_t id) { together[i].push_back(id); }, [&](size_t, GenerationEnd) { ++ends; });
  EXPECT_EQ(together, alone);
  EXPECT_EQ(ends, prompts.size());
  EXPECT_EQ(passes, 5);  // 6 ids each, the last ones not evaluated
}

// A server's pass (Model::step_rows): one sequence's prompt chunks share
// weight passes with another's decode rows; each generates the golden ids,
// holds its ids, and the passes are accounted with all their rows.
TEST(Model, StepRowsSharesPassesAndGeneratesTheGoldenIds) {
  const test::Golden& g = test::Golden::get();
  auto model = Model::open(test::tiny_dir(), resident());
  Session a = model->session(greedy(*model));
  Session b = model->session(greedy(*model));
  a.prefill(g.greedy_prompt);
  const std::vector<int32_t>& p = g.greedy_prompt;
  const size_t half = p.size() / 2;
  ASSERT_GT(half, 0u);
  std::vector<int32_t> a_ids, b_ids;
  a_ids.push_back(a.sample());
  // b's prompt in two chunks, each in a pass with a's decode row.
  std::vector<Session*> both = {&a, &b};
  std::vector<std::span<const int32_t>> chunks = {{}, std::span<const int32_t>(p).first(half)};
  const std::vector<PassAccount> before = model->counters().passes_by_rows;
  model->step_rows(both, chunks);
  const std::vector<PassAccount> after = model->counters().passes_by_rows;
  ASSERT_GT(after.size(), 1 + half);
  EXPECT_EQ(after[1 + half].passes, (before.size() > 1 + half ? before[1 + half].passes : 0) + 1)
      << "a pass of a decode row and a chunk of " << half << " ids is accounted with " << 1 + half << " rows";
  a_ids.push_back(a.sample());
  chunks = {{}, std::span<const int32_t>(p).subspan(half)};
  model->step_rows(both, chunks);
  EXPECT_EQ(b.ids(), p);
  EXPECT_TRUE(test::same_bits(b.current_row(), fresh_row(*model, p)));
  while (b_ids.size() < g.greedy_ids.size()) {
    a_ids.push_back(a.sample());
    b_ids.push_back(b.sample());
    if (b_ids.size() == g.greedy_ids.size()) break;
    model->step_rows(both, std::vector<std::span<const int32_t>>(2));
  }
  a_ids.resize(g.greedy_ids.size());
  EXPECT_EQ(a_ids, g.greedy_ids);
  EXPECT_EQ(b_ids, g.greedy_ids);
  std::vector<int32_t> all = p;
  all.insert(all.end(), b_ids.begin(), b_ids.end());
  EXPECT_EQ(b.ids(), all);
}

// A server's pass with more rows than a batch (Model::step_rows up to
// tokens_per_read): a long prompt's chunk runs layer-major with two other
// sequences' decode rows in the same layer pass, its sub-batches of 4 rows
// holding rows of several sequences. Every row is memcmp-equal to the
// sequence evaluated alone; the progress counts every sub-batch of every
// layer; a pass stopped part-way puts every sequence back as before it
// (ids, pending id, state), and running it again gives the same bits.
TEST(Model, StepRowsRunsALongChunkLayerMajorWithDecodeRows) {
  const test::Golden& g = test::Golden::get();
  auto model = Model::open(test::tiny_dir(), resident());
  std::vector<int32_t> longp;
  while (longp.size() < 42) longp.insert(longp.end(), g.greedy_prompt.begin(), g.greedy_prompt.end());
  longp.resize(42);
  const std::vector<int32_t> pa(g.greedy_prompt.begin(), g.greedy_prompt.end() - 1);
  const std::vector<int32_t>& pb = g.greedy_prompt;
  // The references, one sequence at a time in batches of 256.
  const std::vector<float> long_alone = fresh_row(*model, longp);
  Session a = model->session(greedy(*model));
  Session b = model->session(greedy(*model));
  a.prefill(pa);
  b.prefill(pb);
  const int32_t ida = a.sample(), idb = b.sample();
  std::vector<int32_t> a_next = pa, b_next = pb;
  a_next.push_back(ida);
  b_next.push_back(idb);
  const std::vector<float> a_alone = fresh_row(*model, a_next), b_alone = fresh_row(*model, b_next);

  model->forward_pass().set_max_batch(4);
  model->forward_pass().set_chunk(64);
  ASSERT_EQ(model->tokens_per_read(), 64u);
  Session c = model->session(greedy(*model));
  std::vector<Session*> all = {&a, &b, &c};
  const std::vector<std::span<const int32_t>> chunks = {{}, {}, std::span<const int32_t>(longp)};
  // Stopped after 20 of the pass's 11 x 13 steps: all three as before it.
  Model::PassControl control;
  int64_t steps = 0, total = 0;
  control.progress = [&](int64_t done, int64_t of) {
    steps = done;
    total = of;
  };
  control.stop = [&] { return steps >= 20; };
  try {
    model->step_rows(all, chunks, control);
    ADD_FAILURE() << "the pass was not stopped";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kInterrupted);
  }
  EXPECT_EQ(steps, 20);
  EXPECT_EQ(total, 11 * model->config().num_hidden_layers) << "42 rows in sub-batches of 4, every layer";
  EXPECT_EQ(a.position(), static_cast<int64_t>(a_next.size()));
  EXPECT_EQ(a.pending(), std::vector<int32_t>{ida});
  EXPECT_EQ(b.pending(), std::vector<int32_t>{idb});
  EXPECT_EQ(c.position(), 0);
  EXPECT_EQ(c.state().positions, 0);
  EXPECT_EQ(a.state().positions, static_cast<int64_t>(pa.size()));

  // Again, to the end: every row as alone.
  control.stop = nullptr;
  model->step_rows(all, chunks, control);
  EXPECT_EQ(steps, total);
  EXPECT_EQ(c.ids(), longp);
  EXPECT_TRUE(test::same_bits(c.current_row(), long_alone));
  EXPECT_TRUE(test::same_bits(a.current_row(), a_alone));
  EXPECT_TRUE(test::same_bits(b.current_row(), b_alone));
  EXPECT_EQ(a.ids(), a_next);
}

// Save points kept inside a server's pass (Model::step_rows with keeps): a
// long prompt with a decode row riding along, kept after 10 of its ids and
// at its end, in one weight pass. Each point is bit-equal to the mark() of
// a session that evaluated just those ids (state, row, nothing pending),
// and a session continued from the first gives the whole prompt's row.
TEST(Model, StepRowsKeepsSavePointsInsideThePass) {
  const test::Golden& g = test::Golden::get();
  auto model = Model::open(test::tiny_dir(), resident());
  std::vector<int32_t> longp;
  while (longp.size() < 42) longp.insert(longp.end(), g.greedy_prompt.begin(), g.greedy_prompt.end());
  longp.resize(42);
  const std::vector<int32_t> first(longp.begin(), longp.begin() + 10), rest(longp.begin() + 10, longp.end());
  Session alone = model->session(greedy(*model));
  alone.prefill(first);
  const SavePoint want = alone.mark();
  model->forward_pass().set_max_batch(4);
  model->forward_pass().set_chunk(64);
  Session a = model->session(greedy(*model));
  a.prefill(g.greedy_prompt);
  a.sample();
  Session c = model->session(greedy(*model));
  std::vector<Session*> all = {&a, &c};
  const std::vector<std::span<const int32_t>> chunks = {{}, std::span<const int32_t>(longp)};
  const std::vector<SavePointWithin> keeps = {{1, 10}, {1, 42}};
  const int64_t passes = model->counters().passes_by_rows.size() > 43 ? model->counters().passes_by_rows[43].passes : 0;
  const std::vector<SavePoint> points = model->step_rows(all, chunks, {}, keeps);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(model->counters().passes_by_rows.at(43).passes, passes + 1) << "one weight pass";
  const SavePoint& got = points[0];
  EXPECT_EQ(got.state.tokens, first);
  EXPECT_EQ(got.state.positions, 10);
  EXPECT_TRUE(got.pending.empty() && got.has_row);
  EXPECT_TRUE(test::same_bits(got.row, want.row)) << "the logits of the kept point's last id";
  for (size_t i = 0; i < got.state.layers.size(); ++i) {
    const LayerState &x = got.state.layers[i], &y = want.state.layers[i];
    EXPECT_TRUE(test::same_bits(x.kda.S, y.kda.S) && test::same_bits(x.kda.conv_q, y.kda.conv_q) &&
                test::same_bits(x.kda.conv_k, y.kda.conv_k) && test::same_bits(x.kda.conv_v, y.kda.conv_v) &&
                test::same_bits(x.mla.latent, y.mla.latent))
        << "layer " << i;
  }
  EXPECT_EQ(points[1].state.tokens, longp);
  EXPECT_TRUE(test::same_bits(points[1].row, c.current_row())) << "a keep at the end is the session's mark()";
  Session d = model->session(greedy(*model));
  d.rollback(got);
  d.prefill(rest);
  EXPECT_TRUE(test::same_bits(d.current_row(), c.current_row()));
  EXPECT_TRUE(test::same_bits(c.current_row(), fresh_row(*model, longp)));
}

TEST(Model, StreamedModelGeneratesTheGoldenIdsAndCountsItsPasses) {
  const test::Golden& g = test::Golden::get();
  ModelParams p = resident();
  p.stream.preset = "min";
  p.context = 64;
  std::ostringstream log;
  p.log = &log;
  std::vector<std::string> steps;
  p.progress = [&](const char* what, uint64_t, uint64_t) { steps.push_back(what); };
  auto model = Model::open(test::tiny_dir(), p);
  EXPECT_NE(log.str().find("memory plan"), std::string::npos) << log.str();
  ModelCounters c = model->counters();
  EXPECT_TRUE(c.streaming);
  EXPECT_EQ(c.preset, "min");
  EXPECT_GT(c.forecast_peak_rss, 0u);
  Session s = model->session(greedy(*model));
  s.prefill(g.greedy_prompt);
  model->prefill_done();
  EXPECT_EQ(generate(s, static_cast<int64_t>(g.greedy_ids.size())), g.greedy_ids);
  c = model->counters();
  ASSERT_GE(c.passes_by_rows.size(), 2u);
  EXPECT_EQ(c.passes_by_rows[1].passes, g.greedy_ids.size() - 1);  // the last id is not evaluated
  EXPECT_EQ(c.passes_by_rows[1].expert_bytes + c.passes_by_rows[1].trunk_bytes,
            c.now.expert_bytes - c.after_prefill.expert_bytes + c.now.trunk_bytes - c.after_prefill.trunk_bytes);
}

TEST(Model, APlanThatDoesNotFitIsRefusedWithKResource) {
  ModelParams p = resident();
  p.stream.preset = "max";
  std::ostringstream log;
  p.log = &log;
  ::setenv("K3_AVAILABLE_MEMORY", "1000", 1);
  try {
    Model::open(test::tiny_dir(), p);
    ADD_FAILURE() << "a plan over 1000 bytes of memory was not refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kResource) << e.what();
    EXPECT_NE(std::string(e.what()).find("memory plan needs"), std::string::npos) << e.what();
  }
  ::unsetenv("K3_AVAILABLE_MEMORY");
  EXPECT_NE(log.str().find("memory plan"), std::string::npos);  // the plan is on the log before the refusal
}

// A server plans before it listens, then loads: the model made from that
// plan plans nothing again. Proof: it loads where a fresh plan would now be
// refused (1000 bytes of memory), says no plan on its own log, and runs
// the plan's preset to the golden ids.
TEST(Model, AModelLoadedFromItsPlanDoesNotPlanAgain) {
  const test::Golden& g = test::Golden::get();
  ModelParams p = resident();
  p.stream.preset = "min";
  p.context = 64;
  std::ostringstream plan_log;
  p.log = &plan_log;
  const ModelConfig config = load_model_config(test::tiny_dir());
  ModelPlan plan = Model::plan(config, Checkpoint::open(test::tiny_dir()), p);
  EXPECT_NE(plan_log.str().find("memory plan"), std::string::npos) << plan_log.str();
  ASSERT_TRUE(plan.stream);
  std::ostringstream load_log;
  p.log = &load_log;
  ::setenv("K3_AVAILABLE_MEMORY", "1000", 1);
  std::unique_ptr<Model> model;
  try {
    model = std::make_unique<Model>(config, Checkpoint::open(test::tiny_dir()), p, std::move(plan));
  } catch (const Error& e) {
    ADD_FAILURE() << "loading from the plan planned again: " << e.what();
  }
  EXPECT_EQ(load_log.str().find("memory plan"), std::string::npos) << load_log.str();
  p.log = nullptr;
  EXPECT_THROW(Model::plan(config, Checkpoint::open(test::tiny_dir()), p), Error);  // a fresh plan is refused now
  ::unsetenv("K3_AVAILABLE_MEMORY");
  ASSERT_TRUE(model);
  EXPECT_EQ(model->counters().preset, "min");
  Session s = model->session(greedy(*model));
  s.prefill(g.greedy_prompt);
  EXPECT_EQ(generate(s, static_cast<int64_t>(g.greedy_ids.size())), g.greedy_ids);
}

}  // namespace
}  // namespace k3
