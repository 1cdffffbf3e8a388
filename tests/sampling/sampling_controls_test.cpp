// Penalties, stop strings and logprobs against hand-computed values, and a
// penalised sampled run pinned from sampler_reference.py (its own MT19937-64
// and the documented steps, penalties as llama.cpp applies them).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/error.h"
#include "sampling/logit_bias.h"
#include "sampling/logprobs.h"
#include "sampling/penalties.h"
#include "sampling/sampler.h"
#include "sampling/stop_strings.h"

using namespace k3;

namespace {
PenaltyParams penalties(double rep, double freq, double pres, int32_t last_n) {
  PenaltyParams p;
  p.repetition = rep;
  p.frequency = freq;
  p.presence = pres;
  p.last_n = last_n;
  return p;
}
}  // namespace

// Window [1, 2, 0, 0] (last 4 of the sequence): counts 0:2, 1:1, 2:1.
// id 0:  1.5 / 2 = 0.75,  - 2*0.25 - 0.5 = -0.25
// id 1: -0.5 * 2 = -1.0,  - 1*0.25 - 0.5 = -1.75
// id 2:  2.0 / 2 = 1.0,   - 1*0.25 - 0.5 =  0.25
// id 3: not in the window: unchanged.
TEST(Penalties, HandComputedWindow) {
  std::vector<float> l = {1.5f, -0.5f, 2.0f, 0.0f};
  const std::vector<int32_t> seq = {0, 1, 1, 2, 0, 0};
  apply_penalties(l.data(), 4, seq, penalties(2.0, 0.25, 0.5, 4));
  EXPECT_EQ(l, (std::vector<float>{-0.25f, -1.75f, 0.25f, 0.0f}));
}

// The whole sequence (-1): counts 0:3, 1:2, 2:1.
TEST(Penalties, WholeSequence) {
  std::vector<float> l = {1.5f, -0.5f, 2.0f, 0.0f};
  const std::vector<int32_t> seq = {0, 1, 1, 2, 0, 0};
  apply_penalties(l.data(), 4, seq, penalties(2.0, 0.25, 0.5, -1));
  EXPECT_EQ(l, (std::vector<float>{-0.5f, -2.0f, 0.25f, 0.0f}));
}

TEST(Penalties, NeutralValuesChangeNoBit) {
  const std::vector<float> orig = {1.5f, -0.5f, 2.0f, 0.1f};
  std::vector<float> l = orig;
  apply_penalties(l.data(), 4, std::vector<int32_t>{0, 1, 2, 3}, PenaltyParams{});
  EXPECT_EQ(l, orig);
  apply_penalties(l.data(), 4, std::vector<int32_t>{0, 1, 2, 3}, penalties(1.5, 0.5, 0.5, 0));  // no window
  EXPECT_EQ(l, orig);
}

TEST(Penalties, GreedyFollowsThePenalisedRow) {
  const std::vector<float> l = {3.0f, 2.0f};
  const std::vector<int32_t> seq = {0};
  SamplingParams p;
  EXPECT_EQ(Sampler(p).next(l.data(), 2, 1, seq), 0);  // unset: plain argmax
  p.penalties = penalties(2.0, 0, 0, 64);              // 3.0 / 2 = 1.5 < 2.0
  EXPECT_EQ(Sampler(p).next(l.data(), 2, 1, seq), 1);
  p.penalties = penalties(1.0, 0, 1.5, 64);  // 3.0 - 1.5 = 1.5 < 2.0
  EXPECT_EQ(Sampler(p).next(l.data(), 2, 1, seq), 1);
  p.penalties = penalties(1.0, 0.5, 0, 64);  // 3.0 - 0.5 = 2.5 > 2.0
  EXPECT_EQ(Sampler(p).next(l.data(), 2, 1, seq), 0);
}

// logit_bias adds to the row after the penalties: [1.5, -0.5, 2.0, 0.0]
// with +3 on id 1 and -100 on id 2 is [1.5, 2.5, -98.0, 0.0] (greedy: 1).
TEST(LogitBias, AddedAfterThePenalties) {
  std::vector<float> l = {1.5f, -0.5f, 2.0f, 0.0f};
  const std::vector<LogitBias> b = {{1, 3.0f}, {2, -100.0f}};
  apply_logit_bias(l.data(), 4, b);
  EXPECT_EQ(l, (std::vector<float>{1.5f, 2.5f, -98.0f, 0.0f}));
  const std::vector<float> row = {1.5f, -0.5f, 2.0f, 0.0f};
  SamplingParams p;
  EXPECT_EQ(Sampler(p).next(row.data(), 4, 0), 2);
  p.logit_bias = b;
  EXPECT_EQ(Sampler(p).next(row.data(), 4, 0), 1);
  // A repetition penalty of 2 on id 1 (seen) first: -0.5 * 2 + 3 = 2.0, above id 0's 1.5.
  p.penalties = penalties(2.0, 0, 0, -1);
  const std::vector<int32_t> seen = {1};
  EXPECT_EQ(Sampler(p).next(row.data(), 4, 1, seen), 1);
  p.logit_bias = {{1, 1.0f}, {2, -100.0f}};  // -1.0 + 1 = 0.0 < 1.5: id 0
  EXPECT_EQ(Sampler(p).next(row.data(), 4, 1, seen), 0);
  EXPECT_THROW(apply_logit_bias(l.data(), 4, std::vector<LogitBias>{{4, 1.0f}}), Error);
}

TEST(Penalties, OutOfRangeFlagsAreUsageErrors) {
  for (const PenaltyParams& p : {penalties(0, 0, 0, 64), penalties(1, 2.5, 0, 64), penalties(1, 0, -3, 64),
                                 penalties(1, 0, 0, -2), penalties(NAN, 0, 0, 64)}) {
    try {
      validate_penalty_params(p);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kUsage);
    }
  }
}

// sampler_reference.py, case "penalised": the row of sampler_test's kLogits
// after repetition 1.3, frequency 0.25, presence 0.5 over the last 6 ids of
// [5, 10, 5, 3, 8, 5, 1, 10], then sampled at temperature 1 with seed 99
// from position 8 (closest boundary 0.000911 of the total weight, far above
// the float rounding of the penalised row).
TEST(Penalties, SampledIdsPinnedFromTheReference) {
  const std::vector<float> logits = {1.5f, 2.25f, -0.5f, 2.25f, 0.0f, 3.0f, 1.0f, -1.25f, 2.5f, 0.75f, 3.0f, -2.0f};
  const std::vector<int32_t> seq = {5, 10, 5, 3, 8, 5, 1, 10};
  SamplingParams p;
  p.temperature = 1.0;
  p.seed = 99;
  p.penalties = penalties(1.3, 0.25, 0.5, 6);
  Sampler s(p);
  std::vector<int32_t> got;
  for (int64_t pos = 8; pos < 24; ++pos) got.push_back(s.next(logits.data(), 12, pos, seq));
  EXPECT_EQ(got, (std::vector<int32_t>{0, 5, 5, 3, 0, 5, 8, 8, 3, 8, 8, 8, 0, 5, 0, 3}));
}

TEST(StopStrings, MatchedAcrossPiecesAndNotShown) {
  StopStrings s({"\n\nUser:"});
  std::string shown = s.push("Paris.");
  shown += s.push("\n");  // could start the stop string: held
  EXPECT_EQ(shown, "Paris.");
  shown += s.push("\nUs");
  EXPECT_EQ(shown, "Paris.");
  shown += s.push("er: more");
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(shown, "Paris.");
  EXPECT_EQ(s.push("after"), "");
  EXPECT_EQ(s.finish(), "");
}

TEST(StopStrings, HeldTextReleasedWhenItCannotMatch) {
  StopStrings s({"END"});
  EXPECT_EQ(s.push("the E"), "the ");
  EXPECT_EQ(s.push("N"), "");
  EXPECT_EQ(s.push("x"), "ENx");
  EXPECT_EQ(s.push("EN"), "");
  EXPECT_FALSE(s.stopped());
  EXPECT_EQ(s.finish(), "EN");  // no match at the end: everything is shown
}

TEST(StopStrings, EarliestMatchWins) {
  StopStrings s({"cd", "b"});
  EXPECT_EQ(s.push("abcd"), "a");
  EXPECT_TRUE(s.stopped());
  StopStrings inside({"xyz"});
  EXPECT_EQ(inside.push("1xyz2"), "1");
}

TEST(StopStrings, EmptyStopIsAUsageError) {
  try {
    StopStrings s({"a", ""});
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
  }
}

// Ids: an id is written once its text cannot reach into a stop string; at a
// match, the ids wholly before the stop text; the one it begins in is not.
TEST(StopStringIds, ReleasedAndCut) {
  StopStringIds s({"<|im"});
  EXPECT_EQ(s.push(1, "Hello"), std::vector<int32_t>{1});
  EXPECT_EQ(s.push(2, " world<"), std::vector<int32_t>{});  // ends in "<": may begin the stop
  EXPECT_EQ(s.push(3, "|"), std::vector<int32_t>{});
  EXPECT_EQ(s.push(4, "im_end"), std::vector<int32_t>{});  // match begins inside id 2
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.finish(), std::vector<int32_t>{});

  StopStringIds t({"<|im"});
  EXPECT_EQ(t.push(1, "a<"), std::vector<int32_t>{});
  EXPECT_EQ(t.push(2, "b"), (std::vector<int32_t>{1, 2}));  // "<b" is no stop
  EXPECT_EQ(t.push(3, "c"), std::vector<int32_t>{3});
  EXPECT_EQ(t.push(4, "<|"), std::vector<int32_t>{});
  EXPECT_EQ(t.finish(), std::vector<int32_t>{4});  // no match at the end: written

  StopStringIds u({"STOP"});
  EXPECT_EQ(u.push(1, "x"), std::vector<int32_t>{1});
  EXPECT_EQ(u.push(2, "ST"), std::vector<int32_t>{});
  EXPECT_EQ(u.push(3, "OP"), std::vector<int32_t>{});  // the stop text is exactly ids 2 and 3
  EXPECT_TRUE(u.stopped());
}

// Two equal logits: log(1/2) each. [1, 0, 0]: S = 1 + 2/e.
TEST(Logprobs, HandComputed) {
  const std::vector<float> even = {0.0f, 0.0f};
  const PositionLogprobs a = logprobs_at(even.data(), 2, 1, 2, 7);
  EXPECT_EQ(a.position, 7);
  EXPECT_EQ(a.chosen.id, 1);
  EXPECT_NEAR(a.chosen.logprob, -0.69314718055994531, 1e-15);
  ASSERT_EQ(a.top.size(), 2u);
  EXPECT_EQ(a.top[0].id, 0);  // ties: the lower id first
  EXPECT_EQ(a.top[1].id, 1);

  const std::vector<float> l = {1.0f, 0.0f, 0.0f, -1.0f};
  const double S = 1.0 + 2.0 * std::exp(-1.0) + std::exp(-2.0);
  const PositionLogprobs b = logprobs_at(l.data(), 4, 3, 2, 0);
  EXPECT_NEAR(b.chosen.logprob, -2.0 - std::log(S), 1e-14);
  ASSERT_EQ(b.top.size(), 2u);
  EXPECT_EQ(b.top[0].id, 0);
  EXPECT_NEAR(b.top[0].logprob, -std::log(S), 1e-14);
  EXPECT_EQ(b.top[1].id, 1);
  EXPECT_NEAR(b.top[1].logprob, -1.0 - std::log(S), 1e-14);
  EXPECT_EQ(logprobs_at(l.data(), 4, 0, 0, 0).top.size(), 0u);
}

TEST(Logprobs, JsonLine) {
  PositionLogprobs p;
  p.position = 3;
  p.chosen = {5, -0.5};
  p.top = {{5, -0.5}, {2, -1.25}};
  EXPECT_EQ(logprobs_json_line(p),
            "{\"position\":3,\"id\":5,\"logprob\":-0.5,\"top\":[{\"id\":5,\"logprob\":-0.5},{\"id\":2,\"logprob\":-1."
            "25}]}\n");
}
