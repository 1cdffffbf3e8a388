// The eviction policies on small hand-made call sequences with the exact hits
// each must give, replayed through ExpertSlots (the expert cache's own slot
// table): LRU thrashes on a cycle longer than the cache, per-layer shares keep
// a layer's expert for its next turn (a layer at its share replaces its own),
// frequency keeps an often-used expert over a recent one, the
// never-evict-in-use rule holds for every policy, and Belady's optimum is
// never below any of them.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>

#include "common/error.h"
#include "expert_cache/expert_cache_policy.h"
#include "expert_cache/expert_cache_replay.h"
#include "expert_cache/expert_slots.h"

using namespace k3;

namespace {

// `tokens` passes over the layers in order, one call per layer each: layer
// l asks for experts[l] every time.
ExpertCallSequence cycle(const ExpertCacheShape& s, const std::vector<std::vector<int>>& experts, int tokens) {
  ExpertCallSequence seq;
  seq.passes = static_cast<uint64_t>(tokens);
  for (int t = 0; t < tokens; ++t)
    for (int l = 0; l < s.layers; ++l) seq.calls.push_back({s.first_layer + l, experts[static_cast<size_t>(l)]});
  return seq;
}

ExpertCallSequence calls(int layer, const std::vector<int>& one_expert_each) {
  ExpertCallSequence seq;
  seq.passes = 1;
  for (int e : one_expert_each) seq.calls.push_back({layer, {e}});
  return seq;
}

uint64_t hits(const ExpertCallSequence& seq, const ExpertCacheShape& s, uint64_t slots, ExpertCachePolicyKind k) {
  return replay_expert_cache(seq, s, slots, k).hits;
}

}  // namespace

TEST(ExpertCachePolicy, LayerSharesKeepAnExpertPerLayerWhereLruThrashes) {
  // Three MoE layers (1..3), one expert each per token, two slots: the
  // token's cycle of three experts does not fit.
  const ExpertCacheShape s{1, 3, 8, 1};
  const ExpertCallSequence seq = cycle(s, {{0}, {1}, {2}}, 10);
  // LRU evicts each expert just before its layer comes round again.
  EXPECT_EQ(hits(seq, s, 2, ExpertCachePolicyKind::kLru), 0u);
  EXPECT_EQ(hits(seq, s, 2, ExpertCachePolicyKind::kLfu), 0u);  // equal counts: the oldest goes, as LRU
  // Shares 1, 1, 0: layer 1 keeps its expert from the second token on; the
  // other two take turns in the remaining slot.
  EXPECT_EQ(hits(seq, s, 2, ExpertCachePolicyKind::kLayer), 9u);
  EXPECT_EQ(hits(seq, s, 2, ExpertCachePolicyKind::kLayerLfu), 9u);
  EXPECT_GE(replay_belady(seq, s, 2).hits, 9u);
  // With a slot per layer every policy hits all but the first token.
  for (ExpertCachePolicyKind k : expert_cache_policy_kinds())
    EXPECT_EQ(hits(seq, s, 3, k), 27u) << expert_cache_policy_name(k);
}

TEST(ExpertCachePolicy, ALayerAtItsShareReplacesItsOwnExpert) {
  // Two layers, one slot each: layer 0 alternates experts 0 and 1, layer 1
  // always asks for 5. Layer 0's miss must evict its own old expert, not
  // layer 1's 5 (delivered last, but due again next).
  const ExpertCacheShape s{0, 2, 8, 1};
  ExpertCallSequence seq;
  seq.passes = 10;
  for (int t = 0; t < 10; ++t) {
    seq.calls.push_back({0, {t % 2}});
    seq.calls.push_back({1, {5}});
  }
  EXPECT_EQ(hits(seq, s, 2, ExpertCachePolicyKind::kLayer), 9u);
  EXPECT_EQ(hits(seq, s, 2, ExpertCachePolicyKind::kLayerLfu), 9u);
  EXPECT_EQ(hits(seq, s, 2, ExpertCachePolicyKind::kLru), 9u);
  EXPECT_GE(replay_belady(seq, s, 2).hits, 9u);
}

TEST(ExpertCachePolicy, FrequencyKeepsAnOftenUsedExpertOverARecentOne) {
  // One layer, two slots: 0 three times, then 1, 2, 0.
  const ExpertCacheShape s{0, 1, 8, 1};
  const ExpertCallSequence seq = calls(0, {0, 0, 0, 1, 2, 0});
  // LRU: 2 evicts 0 (used before 1), so the last 0 misses.
  EXPECT_EQ(hits(seq, s, 2, ExpertCachePolicyKind::kLru), 2u);
  EXPECT_EQ(hits(seq, s, 2, ExpertCachePolicyKind::kLayer), 2u);
  // Frequency: 2 evicts 1 (used once), the last 0 hits.
  EXPECT_EQ(hits(seq, s, 2, ExpertCachePolicyKind::kLfu), 3u);
  EXPECT_EQ(hits(seq, s, 2, ExpertCachePolicyKind::kLayerLfu), 3u);
  EXPECT_EQ(replay_belady(seq, s, 2).hits, 3u);
}

TEST(ExpertCachePolicy, CountsAgeSoAnOldFavouriteMakesWay) {
  // Expert 0 used 3 times, then 1 and 2 alternate (one layer, one expert
  // per token: counts halve every 4 uses). 1 and 2 first evict each other
  // (each once used, below 0's count), then 0's count has faded below theirs
  // and it goes: from the fifth of them on, every one is a hit.
  const ExpertCacheShape s{0, 1, 8, 1};
  std::vector<int> order = {0, 0, 0};
  for (int i = 0; i < 20; ++i) order.push_back(1 + i % 2);
  const ExpertCallSequence seq = calls(0, order);
  EXPECT_EQ(hits(seq, s, 2, ExpertCachePolicyKind::kLru), 2u + 18u);
  EXPECT_EQ(hits(seq, s, 2, ExpertCachePolicyKind::kLfu), 2u + 16u);
  EXPECT_EQ(hits(seq, s, 2, ExpertCachePolicyKind::kLayerLfu), 2u + 16u);
}

TEST(ExpertCachePolicy, NoPolicyEvictsASlotInUseOrKept) {
  const ExpertCacheShape s{0, 2, 8, 2};
  for (ExpertCachePolicyKind k : expert_cache_policy_kinds()) {
    ExpertSlots t(3, make_expert_cache_policy(k, s, 3));
    const int a = t.take(0), b = t.take(1), c = t.take(8 + 0);
    for (int slot : {a, b, c}) t.make_resident(slot);
    EXPECT_EQ(t.take(8 + 1), -1) << expert_cache_policy_name(k) << ": every slot is in use";
    t.release(a);
    t.release(c);
    const std::vector<int64_t> keep = {0};
    EXPECT_EQ(t.take(8 + 1, &keep), c) << expert_cache_policy_name(k) << ": a (kept) and b (in use) stay";
    EXPECT_EQ(t.find(8 + 0), -1);
    EXPECT_EQ(t.find(0), a);
    EXPECT_EQ(t.take(8 + 2, &keep), -1) << expert_cache_policy_name(k);
    t.drop(c);  // a failed read: the slot is free again
    EXPECT_EQ(t.take(8 + 2), c);
  }
}

// --expert-lookahead's per-slot marks live in the slot table: the bytes of
// the read that filled a slot, and whether a guess asked for it, until a
// layer claims it (once) or another read refills the slot.
TEST(ExpertSlots, RemembersEachSlotsReadAndWhetherAGuessAskedForIt) {
  const ExpertCacheShape s{0, 2, 8, 2};
  ExpertSlots t(2, make_expert_cache_policy(ExpertCachePolicyKind::kLru, s, 2));
  const int a = t.take(0), b = t.take(1);
  EXPECT_FALSE(t.guessed(a));
  EXPECT_EQ(t.read_bytes(a), 0u);
  t.note_read(a, 4096, /*guessed=*/true);
  t.note_read(b, 8192, /*guessed=*/false);
  EXPECT_TRUE(t.guessed(a));
  EXPECT_FALSE(t.guessed(b));
  EXPECT_EQ(t.read_bytes(a), 4096u);
  EXPECT_EQ(t.read_bytes(b), 8192u);
  EXPECT_TRUE(t.claim_guess(a));
  EXPECT_FALSE(t.claim_guess(a)) << "a guess is claimed once";
  EXPECT_FALSE(t.guessed(a));
  EXPECT_FALSE(t.claim_guess(b));
  t.note_read(b, 100, /*guessed=*/true);
  t.note_read(b, 200, /*guessed=*/false);  // refilled by a layer's own read
  EXPECT_FALSE(t.guessed(b));
  EXPECT_EQ(t.read_bytes(b), 200u);
}

TEST(ExpertCachePolicy, BeladyIsNeverBelowAnOnlinePolicy) {
  const ExpertCacheShape s{1, 6, 12, 3};
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    ExpertCallSequence seq;
    seq.passes = 8;
    std::vector<std::vector<int>> prev(6);
    for (int t = 0; t < 8; ++t)
      for (int l = 0; l < 6; ++l) {
        // Some of the previous token's experts again, the rest at random.
        std::vector<int> e;
        for (int x : prev[l])
          if (rng() % 3 == 0 && e.size() < 3) e.push_back(x);
        while (e.size() < 3) {
          const int x = static_cast<int>(rng() % 12);
          if (std::find(e.begin(), e.end(), x) == e.end()) e.push_back(x);
        }
        prev[l] = e;
        seq.calls.push_back({1 + l, e});
      }
    for (uint64_t slots : {3u, 7u, 12u, 20u}) {
      const uint64_t best = replay_belady(seq, s, slots).hits;
      for (ExpertCachePolicyKind k : expert_cache_policy_kinds())
        EXPECT_LE(hits(seq, s, slots, k), best) << expert_cache_policy_name(k) << " slots " << slots;
    }
  }
}

TEST(ExpertCachePolicy, NamesRoundTripAndUnknownOnesAreUsageErrors) {
  for (ExpertCachePolicyKind k : expert_cache_policy_kinds())
    EXPECT_EQ(parse_expert_cache_policy(expert_cache_policy_name(k), "--p"), k);
  try {
    parse_expert_cache_policy("mru", "--expert-cache-policy");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    EXPECT_NE(std::string(e.what()).find("layer-lfu"), std::string::npos) << e.what();
  }
  EXPECT_EQ(kDefaultExpertCachePolicy, ExpertCachePolicyKind::kLayerLfu);
}
