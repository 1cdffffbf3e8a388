// The sampler against independent math: hand-made logits whose kept sets and
// probabilities are known, a frequency check over many draws, and ids pinned
// from sampler_reference.py (its own MT19937-64 and the documented steps).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "common/error.h"
#include "sampling/portable_exp.h"
#include "sampling/sample_rng.h"
#include "sampling/sampler.h"
#include "sampling/stop_conditions.h"

using namespace k3;

namespace {
// Multiples of 1/8, exact in float32 (the same row as sampler_reference.py).
const std::vector<float> kLogits = {1.5f, 2.25f, -0.5f, 2.25f, 0.0f, 3.0f, 1.0f, -1.25f, 2.5f, 0.75f, 3.0f, -2.0f};

std::vector<int32_t> ids_of(const std::vector<Candidate>& c) {
  std::vector<int32_t> out;
  for (const Candidate& x : c) out.push_back(x.id);
  return out;
}

SamplingParams params(double temp, int k = 0, double p = 1.0, double m = 0.0, uint64_t seed = 0) {
  SamplingParams s;
  s.temperature = temp;
  s.top_k = k;
  s.top_p = p;
  s.min_p = m;
  s.seed = seed;
  return s;
}
// A row sampled from a seed and a first position: the ids expected
// (pinned from sampler_reference.py).
struct SeededCase {
  const std::vector<float>* row;
  uint64_t seed;
  int64_t first;
  SamplingParams p;
  std::vector<int32_t> ids;
};
void expect_seeded_ids(const std::vector<SeededCase>& cases) {
  for (const SeededCase& c : cases) {
    SamplingParams p = c.p;
    p.seed = c.seed;
    Sampler s(p);
    std::vector<int32_t> got;
    for (size_t i = 0; i < c.ids.size(); ++i) got.push_back(s.next(c.row->data(), c.row->size(), c.first + i));
    EXPECT_EQ(got, c.ids) << "seed " << c.seed;
  }
}
}  // namespace

TEST(PortableExp, MatchesLibmClosely) {
  for (double x = -740.0; x <= 700.0; x += 0.37) {
    double want = std::exp(x);
    double got = portable_exp(x);
    // Relative 4e-16 (2 ulp); results below 2^-1022 are subnormal and may differ by their last bit.
    EXPECT_LE(std::fabs(got - want), std::max(4e-16 * want, 2 * std::numeric_limits<double>::denorm_min())) << x;
  }
  EXPECT_EQ(portable_exp(0.0), 1.0);
  EXPECT_EQ(portable_exp(-800.0), 0.0);
  EXPECT_TRUE(std::isinf(portable_exp(710.0)));
  EXPECT_TRUE(std::isnan(portable_exp(NAN)));
  // Monotone on a fine grid near 0, where sampling weights live.
  double prev = 0.0;
  for (int i = -20000; i <= 0; ++i) {
    double v = portable_exp(i * 1e-3);
    EXPECT_GE(v, prev);
    prev = v;
  }
}

TEST(SampleRng, StandardMt19937_64) {
  // The C++ standard requires the 10000th output of a default-seeded
  // mt19937_64 (seed 5489) to be 9981545732273789042.
  SampleRng rng(5489);
  EXPECT_EQ(rng.raw_at(9999), 9981545732273789042ull);
  // First outputs for seed 42, from sampler_reference.py's own MT19937-64.
  SampleRng r42(42);
  EXPECT_EQ(r42.raw_at(0), 13930160852258120406ull);
  EXPECT_EQ(r42.raw_at(1), 11788048577503494824ull);
  EXPECT_EQ(r42.raw_at(2), 13874630024467741450ull);
  EXPECT_EQ(r42.raw_at(3), 2513787319205155662ull);
  // Going back re-seeds: the same position gives the same output.
  EXPECT_EQ(r42.raw_at(1), 11788048577503494824ull);
  // Skipping positions skips outputs.
  SampleRng skip(42);
  EXPECT_EQ(skip.raw_at(3), 2513787319205155662ull);
}

TEST(SampleRng, UnitDouble) {
  EXPECT_EQ(unit_double_from_bits(0), 0.0);
  EXPECT_EQ(unit_double_from_bits(~0ull), 1.0 - std::ldexp(1.0, -53));
  EXPECT_EQ(unit_double_from_bits(1ull << 63), 0.5);
  EXPECT_EQ(unit_double_from_bits((1ull << 11) - 1), 0.0);  // low 11 bits are dropped
  EXPECT_EQ(unit_double_from_bits(1ull << 11), std::ldexp(1.0, -53));
}

TEST(Greedy, ArgmaxTiesToLowerId) {
  EXPECT_EQ(greedy_token(kLogits.data(), kLogits.size()), 5);  // 5 and 10 both 3.0
  std::vector<float> all_equal(7, -1.0f);
  EXPECT_EQ(greedy_token(all_equal.data(), all_equal.size()), 0);
  std::vector<float> last = {0.f, 1.f, 2.f};
  EXPECT_EQ(greedy_token(last.data(), last.size()), 2);
  Sampler s(params(0.0));
  EXPECT_EQ(s.next(kLogits.data(), kLogits.size(), 123), 5);
}

TEST(Greedy, RefusesNonFiniteLogits) {
  std::vector<float> bad = {0.f, NAN, 1.f};
  try {
    greedy_token(bad.data(), bad.size());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kInternal);
    EXPECT_NE(std::string(e.what()).find("id 1"), std::string::npos);
  }
  std::vector<float> inf = {0.f, 1.f, INFINITY};
  EXPECT_THROW(sampling_candidates(inf.data(), inf.size(), params(1.0)), Error);
}

TEST(Candidates, OrderAndProbabilities) {
  // logits ln4, ln2, ln1, ln1 (as floats): probabilities 1/2, 1/4, 1/8, 1/8.
  std::vector<float> l = {std::log(1.0f), std::log(4.0f), std::log(1.0f), std::log(2.0f)};
  auto c = sampling_candidates(l.data(), l.size(), params(1.0));
  ASSERT_EQ(ids_of(c), (std::vector<int32_t>{1, 3, 0, 2}));  // ties: lower id first
  EXPECT_NEAR(c[0].probability, 0.5, 1e-7);
  EXPECT_NEAR(c[1].probability, 0.25, 1e-7);
  EXPECT_NEAR(c[2].probability, 0.125, 1e-7);
  EXPECT_NEAR(c[3].probability, 0.125, 1e-7);

  // Temperature 2 takes square roots of the odds: weights 2, sqrt2, 1, 1.
  c = sampling_candidates(l.data(), l.size(), params(2.0));
  double t = 2 + std::sqrt(2.0) + 2;
  EXPECT_NEAR(c[0].probability, 2 / t, 1e-7);
  EXPECT_NEAR(c[1].probability, std::sqrt(2.0) / t, 1e-7);
  EXPECT_NEAR(c[3].probability, 1 / t, 1e-7);

  // top-k 2: {1, 3} renormalised to 2/3, 1/3.
  c = sampling_candidates(l.data(), l.size(), params(1.0, 2));
  ASSERT_EQ(ids_of(c), (std::vector<int32_t>{1, 3}));
  EXPECT_NEAR(c[0].probability, 2.0 / 3, 1e-7);
  // top-k larger than the vocabulary keeps everything.
  EXPECT_EQ(sampling_candidates(l.data(), l.size(), params(1.0, 100)).size(), 4u);

  // top-p: running sums .5, .75, .875, 1.
  EXPECT_EQ(ids_of(sampling_candidates(l.data(), l.size(), params(1.0, 0, 0.5))), (std::vector<int32_t>{1}));
  EXPECT_EQ(ids_of(sampling_candidates(l.data(), l.size(), params(1.0, 0, 0.7))), (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(ids_of(sampling_candidates(l.data(), l.size(), params(1.0, 0, 0.8))), (std::vector<int32_t>{1, 3, 0}));
  EXPECT_EQ(ids_of(sampling_candidates(l.data(), l.size(), params(1.0, 0, 0.01))), (std::vector<int32_t>{1}));

  // min-p relative to p_0 = 1/2: 0.3 keeps p >= .15 -> {1, 3}; 0.25 keeps p >= .125 -> all.
  EXPECT_EQ(ids_of(sampling_candidates(l.data(), l.size(), params(1.0, 0, 1.0, 0.3))), (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(sampling_candidates(l.data(), l.size(), params(1.0, 0, 1.0, 0.24)).size(), 4u);
  EXPECT_EQ(ids_of(sampling_candidates(l.data(), l.size(), params(1.0, 0, 1.0, 1.0))), (std::vector<int32_t>{1}));

  // The order is temperature, top-k, top-p, min-p: top-k 3 renormalises to
  // 4/7, 2/7, 1/7 before top-p 0.8 (running .571, .857) keeps two.
  c = sampling_candidates(l.data(), l.size(), params(1.0, 3, 0.8));
  ASSERT_EQ(ids_of(c), (std::vector<int32_t>{1, 3}));
  EXPECT_NEAR(c[0].probability, 2.0 / 3, 1e-7);
}

TEST(Candidates, PickBoundaries) {
  std::vector<Candidate> c = {{7, 2.0, 0.5}, {3, 1.0, 0.25}, {9, 1.0, 0.25}};
  EXPECT_EQ(pick_candidate(c, 0.0), 7);
  EXPECT_EQ(pick_candidate(c, 0.4999), 7);
  EXPECT_EQ(pick_candidate(c, 0.5), 3);  // u*W = 2 is not < 2: next candidate
  EXPECT_EQ(pick_candidate(c, 0.74), 3);
  EXPECT_EQ(pick_candidate(c, 0.75), 9);
  EXPECT_EQ(pick_candidate(c, 1.0 - 1e-16), 9);
}

TEST(Sampler, FrequenciesMatchProbabilities) {
  // 200000 positions with one seed; chi-square against the exact probabilities.
  const SamplingParams p = params(0.8, 0, 1.0, 0.0, 2024);
  std::vector<double> prob(kLogits.size(), 0.0);
  {
    double z0 = 3.0 / 0.8, total = 0;
    for (size_t i = 0; i < kLogits.size(); ++i) total += std::exp(kLogits[i] / 0.8 - z0);
    for (size_t i = 0; i < kLogits.size(); ++i) prob[i] = std::exp(kLogits[i] / 0.8 - z0) / total;
  }
  Sampler s(p);
  const int kDraws = 200000;
  std::vector<int> count(kLogits.size(), 0);
  for (int i = 0; i < kDraws; ++i) ++count[s.next(kLogits.data(), kLogits.size(), i)];
  double chi2 = 0;
  for (size_t i = 0; i < prob.size(); ++i) {
    double e = prob[i] * kDraws;
    chi2 += (count[i] - e) * (count[i] - e) / e;
  }
  // 11 degrees of freedom: P(chi2 > 31.3) = 0.001.
  EXPECT_LT(chi2, 31.3);
  // Ties get equal shares (ids 5 and 10, 1 and 3).
  EXPECT_NEAR(count[5], count[10], 0.02 * kDraws);
  EXPECT_NEAR(count[1], count[3], 0.02 * kDraws);
}

TEST(Sampler, PinnedIdsFromIndependentReference) {
  // python3 tests/sampling/sampler_reference.py
  expect_seeded_ids({
      {&kLogits, 42, 0, params(1.0), {3, 1, 3, 5, 0, 5, 8, 10, 10, 10, 5, 8, 1, 1, 3, 6}},
      {&kLogits, 12345, 100, params(0.7, 5, 0.85), {1, 1, 5, 10, 8, 5, 10, 5, 10, 10, 5, 5, 10, 5, 1, 10}},
      {&kLogits, 7, 3, params(0.7, 0, 1.0, 0.4), {8, 5, 5, 8, 8, 5, 10, 10, 10, 5, 5, 8, 5, 8, 8, 8}},
      {&kLogits, ~0ull, 7, params(2.5), {8, 5, 8, 4, 6, 5, 9, 8, 5, 8, 4, 10}},
  });
}

TEST(Sampler, TopPKeepsTheCandidateWhoseRunningSumEqualsP) {
  // Running sums that land exactly on p (see BOUNDARY_CASES in
  // sampler_reference.py): the candidate that reaches p is the last one kept,
  // so a `cum > p` cut-off keeps one more and these ids change.
  const std::vector<float> level(8, 0.625f);
  EXPECT_EQ(ids_of(sampling_candidates(kLogits.data(), kLogits.size(), params(0.7, 2, 0.5))),
            (std::vector<int32_t>{5}));
  EXPECT_EQ(ids_of(sampling_candidates(level.data(), level.size(), params(1.0, 0, 0.375))),
            (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(ids_of(sampling_candidates(level.data(), level.size(), params(1.3, 0, 0.75))),
            (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  // Just past the sum, the next candidate is needed.
  EXPECT_EQ(ids_of(sampling_candidates(level.data(), level.size(), params(1.0, 0, 0.375 + 1e-9))),
            (std::vector<int32_t>{0, 1, 2, 3}));

  // python3 tests/sampling/sampler_reference.py ("top-p boundary" lines)
  const std::vector<SeededCase> cases = {
      {&kLogits, 99, 0, params(0.7, 2, 0.5), std::vector<int32_t>(16, 5)},
      {&level, 2026, 5, params(1.0, 0, 0.375), {2, 0, 2, 2, 0, 1, 1, 0, 0, 0, 2, 1, 2, 1, 1, 1}},
      {&level, 31, 0, params(1.3, 0, 0.75), {2, 1, 2, 1, 4, 5, 0, 2, 3, 4, 3, 2, 4, 3, 2, 2}},
  };
  expect_seeded_ids(cases);
}

TEST(Sampler, MinPKeepsTheCandidateAtExactlyItsFloor) {
  // Tied logits have equal weights (exp(0) = 1 exactly), so with min-p 1 each
  // tied candidate's probability equals min_p times the most likely one's:
  // it is kept. A `p > floor` cut-off keeps the first one alone, and these
  // ids (and kept sets) change.
  const std::vector<float> level(8, 0.625f);
  EXPECT_EQ(ids_of(sampling_candidates(kLogits.data(), kLogits.size(), params(0.7, 0, 1.0, 1.0))),
            (std::vector<int32_t>{5, 10}));
  EXPECT_EQ(ids_of(sampling_candidates(level.data(), level.size(), params(1.0, 5, 1.0, 1.0))),
            (std::vector<int32_t>{0, 1, 2, 3, 4}));

  // python3 tests/sampling/sampler_reference.py ("min-p boundary" lines)
  const std::vector<SeededCase> cases = {
      {&kLogits, 17, 0, params(0.7, 0, 1.0, 1.0), {10, 5, 10, 10, 5, 10, 5, 5, 5, 10, 10, 5, 5, 5, 5, 10}},
      {&level, 8, 2, params(1.0, 5, 1.0, 1.0), {4, 4, 1, 3, 1, 2, 4, 2, 2, 4, 4, 2, 2, 0, 1, 2}},
  };
  expect_seeded_ids(cases);
}

TEST(Sampler, PositionIndexedDrawsMakeSplitsEqual) {
  // Sampling positions 0..19 in one go equals sampling 0..9, then a fresh
  // sampler (as after loading a state) for 10..19, and equals sampling only
  // the even positions in one sampler and the odd ones in another.
  const SamplingParams p = params(1.3, 0, 0.95, 0.0, 99);
  Sampler one(p), first(p), second(p), even(p), odd(p);
  for (int64_t pos = 0; pos < 20; ++pos) {
    int32_t want = one.next(kLogits.data(), kLogits.size(), pos);
    EXPECT_EQ((pos < 10 ? first : second).next(kLogits.data(), kLogits.size(), pos), want);
    EXPECT_EQ((pos % 2 ? odd : even).next(kLogits.data(), kLogits.size(), pos), want);
  }
}

TEST(Sampler, DifferentSeedsDiffer) {
  Sampler a(params(1.0, 0, 1.0, 0.0, 1)), b(params(1.0, 0, 1.0, 0.0, 2));
  int same = 0;
  for (int pos = 0; pos < 64; ++pos)
    same += a.next(kLogits.data(), kLogits.size(), pos) == b.next(kLogits.data(), kLogits.size(), pos);
  EXPECT_LT(same, 40);
}

TEST(Sampler, ValidatesParams) {
  auto code_of = [](SamplingParams p) {
    try {
      validate_sampling_params(p);
    } catch (const Error& e) {
      return e.code();
    }
    return ExitCode::kOk;
  };
  EXPECT_EQ(code_of(params(-0.1)), ExitCode::kUsage);
  EXPECT_EQ(code_of(params(NAN)), ExitCode::kUsage);
  EXPECT_EQ(code_of(params(INFINITY)), ExitCode::kUsage);
  EXPECT_EQ(code_of(params(1.0, -1)), ExitCode::kUsage);
  EXPECT_EQ(code_of(params(1.0, 0, 0.0)), ExitCode::kUsage);
  EXPECT_EQ(code_of(params(1.0, 0, 1.5)), ExitCode::kUsage);
  EXPECT_EQ(code_of(params(1.0, 0, 1.0, -0.5)), ExitCode::kUsage);
  EXPECT_EQ(code_of(params(1.0, 0, 1.0, 1.5)), ExitCode::kUsage);
  EXPECT_EQ(code_of(params(0.7, 40, 0.9, 0.05)), ExitCode::kOk);
}

TEST(StopConditions, EosStopIdsAndIgnoreEos) {
  StopConditions s({8193}, {17, 5}, false);
  EXPECT_TRUE(s.stops(8193));
  EXPECT_TRUE(s.stops(17));
  EXPECT_TRUE(s.stops(5));
  EXPECT_FALSE(s.stops(6));
  StopConditions ignore({8193}, {17}, true);
  EXPECT_FALSE(ignore.stops(8193));
  EXPECT_TRUE(ignore.stops(17));
  StopConditions none;
  EXPECT_FALSE(none.stops(0));
}
