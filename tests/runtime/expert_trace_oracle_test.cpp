// ExpertTraceOracle (--expert-lookahead-from): each guess is the trace's
// next call for the guessed layer, found past the call of the layer that
// is computing, and cut where an expert repeats (the next pass of a model
// with one MoE layer); everything else reaches the source behind it.
#include "expert_cache/expert_trace_oracle.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace k3 {
namespace {

// Records what reaches it.
class Behind : public WeightSource {
 public:
  std::vector<std::pair<int, std::vector<int>>> guesses, calls;
  void prefetch_guess(int layer, const std::vector<int>& experts) override { guesses.emplace_back(layer, experts); }
  void for_each_expert(int layer, const std::vector<int>& experts,
                       const std::function<void(size_t, const ExpertWeights&)>&) override {
    calls.emplace_back(layer, experts);
  }
  void embed(const int32_t*, size_t, float*) override {}
  const LayerWeights& acquire_layer(int) override { throw std::logic_error("unused"); }
  void release_layer(int) override {}
  const HeadWeights& acquire_head() override { throw std::logic_error("unused"); }
  void release_head() override {}
};

std::vector<ExpertRequest> pairs(std::initializer_list<std::pair<int, int>> v) {
  std::vector<ExpertRequest> r;
  for (auto [l, e] : v) r.push_back(ExpertRequest{l, e});
  return r;
}

TEST(ExpertTraceOracle, GuessesTheNextCallOfTheLayerPastTheOneComputing) {
  Behind behind;
  // Two passes over MoE layers 1 and 2, two experts each.
  ExpertTraceOracle o(behind, pairs({{1, 4}, {1, 0}, {2, 3}, {2, 5}, {1, 1}, {1, 2}, {2, 0}, {2, 7}}), 8);
  const auto none = [](size_t, const ExpertWeights&) {};
  o.prefetch_guess(2, {6, 6});  // made while layer 1 computes, before its call: skips it
  o.for_each_expert(1, {0, 4}, none);
  o.for_each_expert(2, {3, 5}, none);
  o.prefetch_guess(1, {});  // the next pass's first layer
  o.for_each_expert(1, {1, 2}, none);
  o.prefetch_guess(2, {1});
  ASSERT_EQ(behind.guesses.size(), 3u);
  EXPECT_EQ(behind.guesses[0], (std::pair<int, std::vector<int>>{2, {3, 5}}));
  EXPECT_EQ(behind.guesses[1], (std::pair<int, std::vector<int>>{1, {1, 2}}));
  EXPECT_EQ(behind.guesses[2], (std::pair<int, std::vector<int>>{2, {0, 7}}));
  // The calls themselves pass through unchanged.
  ASSERT_EQ(behind.calls.size(), 3u);
  EXPECT_EQ(behind.calls[0], (std::pair<int, std::vector<int>>{1, {0, 4}}));
}

TEST(ExpertTraceOracle, OneMoeLayerCallsEndWhereAnExpertRepeats) {
  Behind behind;
  ExpertTraceOracle o(behind, pairs({{3, 1}, {3, 2}, {3, 2}, {3, 0}}), 4);
  o.prefetch_guess(3, {});
  ASSERT_EQ(behind.guesses.size(), 1u);
  EXPECT_EQ(behind.guesses[0].second, (std::vector<int>{1, 2}));
}

TEST(ExpertTraceOracle, ALayerOutOfReachIsAnEmptyGuessNotAScan) {
  Behind behind;
  // Layer 9 comes only after more than one call's worth of other pairs
  // (num_experts = 2): a trace of another run, so no guess.
  ExpertTraceOracle o(behind, pairs({{1, 0}, {1, 1}, {2, 0}, {9, 1}}), 2);
  o.prefetch_guess(9, {0});
  o.prefetch_guess(4, {0});  // never in the trace
  ASSERT_EQ(behind.guesses.size(), 2u);
  EXPECT_TRUE(behind.guesses[0].second.empty());
  EXPECT_TRUE(behind.guesses[1].second.empty());
  // Past the end of the trace: nothing either.
  const auto none = [](size_t, const ExpertWeights&) {};
  o.for_each_expert(1, {0, 1, 0, 1, 0}, none);
  o.prefetch_guess(9, {0});
  EXPECT_TRUE(behind.guesses.back().second.empty());
}

}  // namespace
}  // namespace k3
