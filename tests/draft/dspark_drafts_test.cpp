// DSpark as the generation session's draft source on the tiny model: the
// ids and the sequence state are those of plain decoding (greedy and
// seeded, 1 and 2 threads, across a chat-style rollback); the draft's
// context holds exactly the committed positions, fused from the taps of the
// passes that committed them (equal to fusing a plain forward's taps); the
// verify-length policy's arithmetic reproduces the published table.
#include <gtest/gtest.h>

#include "common/thread_pool.h"
#include "draft/draft_fixture.h"
#include "draft/dspark_drafts.h"
#include "generate/generation_session.h"

namespace k3 {
namespace {

using test::TinyModel;

const DSparkModel& draft_model() {
  static DSparkModel* m = new DSparkModel(DSparkModel::load(test::draft_dir()));
  return *m;
}

GenerationOptions options(bool sampled, size_t drafts) {
  GenerationOptions o;
  o.stop = StopConditions(TinyModel::get().config.eos_token_ids, {}, /*ignore_eos=*/true);
  if (sampled) {
    o.sampling.temperature = 0.9;
    o.sampling.top_p = 0.95;
    o.sampling.seed = 5;
  }
  o.max_drafts = drafts;
  return o;
}

// Verifies every draft the model proposes: the most verification rows.
VerifyPolicy verify_all() { return VerifyPolicy(7, VerifyCosts{1.0, 0.0, 0.0}); }

struct Outcome {
  std::vector<int32_t> ids;
  SequenceState state;
  DSparkStats stats;
  DraftContext context;
};

Outcome run(int threads, bool sampled, bool draft, int64_t gen) {
  TinyModel& m = TinyModel::get();
  ThreadPool pool(threads);
  ForwardPass engine(m.config, *m.weights, pool);
  GenerationSession s(engine, options(sampled, draft ? 7 : 0));
  DSparkDrafts source(draft_model(), *m.weights, &pool, verify_all());
  s.reset();
  if (draft) {
    engine.set_layer_tap(&source);
    source.attach(&s.state());
    s.set_draft_source(&source);
  }
  Outcome r;
  s.feed(test::Golden::get().greedy_prompt);
  s.generate(gen, [&](int32_t id) { r.ids.push_back(id); });
  r.state = s.state();
  r.stats = source.stats();
  r.context = source.context();
  return r;
}

bool same_state(const SequenceState& a, const SequenceState& b) {
  if (a.positions != b.positions || a.tokens != b.tokens || a.layers.size() != b.layers.size()) return false;
  for (size_t i = 0; i < a.layers.size(); ++i)
    if (a.layers[i].kda.S != b.layers[i].kda.S || a.layers[i].mla.latent != b.layers[i].mla.latent) return false;
  return true;
}

TEST(DSparkDrafts, OutputIsPlainDecodingAndContextIsTheCommittedPositions) {
  for (bool sampled : {false, true})
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(sampled ? "seeded" : "greedy") + " threads " + std::to_string(threads));
      const Outcome plain = run(threads, sampled, false, 24);
      const Outcome drafted = run(threads, sampled, true, 24);
      EXPECT_EQ(drafted.ids, plain.ids);
      EXPECT_TRUE(same_state(drafted.state, plain.state));
      EXPECT_GT(drafted.stats.passes, 0);
      EXPECT_GT(drafted.stats.verified, drafted.stats.passes);  // several rows verified per pass
      // The context: every committed position before the last anchor (at
      // most one pass of 8 rows back), fused once each, equal to fusing a
      // plain forward's taps.
      const int64_t P = drafted.context.positions;
      EXPECT_GE(P, drafted.state.positions - 8);
      EXPECT_LE(P, drafted.state.positions);
      EXPECT_EQ(drafted.stats.positions_fused, P) << "a committed position was fused twice";
      TinyModel& m = TinyModel::get();
      ThreadPool pool(threads);
      ForwardPass engine(m.config, *m.weights, pool);
      test::TapRecorder rec;
      rec.layers = draft_model().config().target_layer_ids;
      rec.hidden = m.config.hidden_size;
      engine.set_layer_tap(&rec);
      SequenceState st;
      engine.reset(st);
      engine.forward(st, std::span<const int32_t>(drafted.state.tokens.data(), static_cast<size_t>(P)),
                     LogitRows::kNone, nullptr);
      DraftContext fresh;
      draft_model().fuse(rec.taps.data(), static_cast<size_t>(P), fresh, &pool);
      EXPECT_EQ(drafted.context.layers, fresh.layers);
    }
}

// A chat turn regenerated from a save point: the draft's context follows the
// rollback (positions are absolute) and the output stays plain decoding's.
TEST(DSparkDrafts, FollowsSessionRollback) {
  TinyModel& m = TinyModel::get();
  ThreadPool pool(2);
  ForwardPass engine(m.config, *m.weights, pool);
  GenerationSession s(engine, options(false, 7));
  DSparkDrafts source(draft_model(), *m.weights, &pool, verify_all());
  engine.set_layer_tap(&source);
  source.attach(&s.state());
  s.set_draft_source(&source);
  s.reset();
  s.feed(test::Golden::get().greedy_prompt);
  GenerationSession::SavePoint point = s.mark();
  std::vector<int32_t> first, second;
  s.generate(15, [&](int32_t id) { first.push_back(id); });
  s.rollback(std::move(point));
  s.generate(15, [&](int32_t id) { second.push_back(id); });
  EXPECT_EQ(first, second);
  EXPECT_EQ(first, run(2, false, false, 15).ids);
  EXPECT_LE(source.context().positions, s.state().positions);
}

TEST(VerifyPolicy, BytesPerTokenReproduceThePublishedTable) {
  // DSPARK.md section 5.2: the GSM8K-like cumulative acceptance
  // 0.86 0.71 0.59 0.48 0.39 0.32 0.26, K3 laptop costs.
  const std::vector<double> cumulative{0.86, 0.71, 0.59, 0.48, 0.39, 0.32, 0.26};
  std::vector<double> p;
  for (size_t i = 0; i < cumulative.size(); ++i) p.push_back(cumulative[i] / (i ? cumulative[i - 1] : 1.0));
  const double table[] = {134.6, 88.7, 74.2, 68.5, 66.6, 66.6, 67.6, 69.4};
  for (size_t k = 0; k <= 7; ++k) EXPECT_NEAR(VerifyPolicy::bytes_per_token(VerifyCosts{}, p, k), table[k], 0.06) << k;
}

TEST(VerifyPolicy, ChoosesFromConfidenceThenMeasuredAcceptance) {
  VerifyPolicy policy(7);
  const std::vector<float> sure(7, 4.0f), unsure(7, -3.0f);  // sigmoid 0.98 / 0.05
  EXPECT_EQ(policy.choose(sure, 100, 7), 7u);
  EXPECT_EQ(policy.choose(sure, 100, 3), 3u);
  EXPECT_EQ(policy.choose(unsure, 100, 7), 0u);
  EXPECT_EQ(policy.choose(sure, VerifyPolicy::kDefaultMaxContext + 1, 7), 0u);
  // Measured: the first draft is always rejected. Confident rows stop being
  // verified once the evidence outweighs the head.
  for (int i = 0; i < 40; ++i) policy.record(3, 0);
  EXPECT_EQ(policy.choose(sure, 100, 7), 0u);
  VerifyPolicy good(7);
  for (int i = 0; i < 40; ++i) good.record(7, 7);
  EXPECT_EQ(good.choose(unsure, 100, 7), 7u);
}

}  // namespace
}  // namespace k3
