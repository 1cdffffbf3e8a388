// ExpertCache::prefetch_guess (--expert-lookahead) over the tiny fixture: a
// guess reads only into slots the current layer does not hold, and only once
// every expert of that layer has its slot; a guess two layers ahead spares
// the nearer layer's guesses, and guesses for one layer add up; guessed experts are delivered
// with the checkpoint's bytes; each guess is scored against the routing that
// follows (right guesses, reads used, reads evicted unused and their bytes).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <thread>

#include "checkpoint/checkpoint.h"
#include "expert_cache/expert_cache.h"
#include "expert_cache/expert_index.h"
#include "io/direct_file.h"
#include "io/read_engine.h"
#include "lib/engine_gate.h"
#include "model/config.h"
#include "model/tensor_manifest.h"
#include "runtime/expert_cache_fixture.h"

using namespace k3;

namespace {

const std::string kTiny = std::string(K3_TEST_DATA) + "/k3-tiny";

using Model = test::ExpertCacheModel;

// Whether a delivered matrix holds the checkpoint's bytes of `name`.
bool same_as_file(const Checkpoint& ck, const std::string& name, const void* data) {
  const TensorLocation& loc = ck.at(name);
  std::vector<uint8_t> want(loc.info->nbytes);
  std::ifstream f(ck.shards()[loc.shard].path, std::ios::binary);
  f.seekg(static_cast<std::streamoff>(loc.info->offset));
  f.read(reinterpret_cast<char*>(want.data()), static_cast<std::streamsize>(want.size()));
  return f.good() && data && std::memcmp(want.data(), data, want.size()) == 0;
}

// The model's order: prefetch, then for_each; every expert once, with its bytes.
void run_layer(Model& m, ExpertCache& cache, int layer, const std::vector<int>& experts) {
  cache.prefetch(layer, experts);
  std::vector<int> count(experts.size(), 0);
  cache.for_each(layer, experts, [&](size_t k, const ExpertWeights& w) {
    ++count[k];
    const std::string p = expert_tensor_prefix(m.config, layer, experts[k]);
    const ExpertMatrix& w1 = w.w1;
    EXPECT_TRUE(w1.is_mxfp4 ? same_as_file(m.checkpoint, p + "w1.weight_packed", w1.mx.packed)
                            : same_as_file(m.checkpoint, p + "w1.weight", w1.bf.data))
        << "layer " << layer << " expert " << experts[k];
  });
  for (size_t k = 0; k < experts.size(); ++k) EXPECT_EQ(count[k], 1) << "expert " << experts[k];
}

}  // namespace

TEST(ExpertLookahead, GuessesFillSpareSlotsOnlyAndAreScored) {
  Model m(kTiny);
  const int l = m.config.first_k_dense_replace;
  ASSERT_GE(m.config.num_hidden_layers, l + 3);
  ASSERT_GE(m.config.num_experts, 12);
  // LRU: the evictions below are the ones its recency order picks; the
  // per-layer default would choose among layer l + 1's own slots instead.
  ExpertCache cache(m.config, m.checkpoint, m.files, 8, m.io, ExpertCachePolicyKind::kLru);
  const std::vector<int> now = {0, 1, 2, 3};
  cache.prefetch(l, now);
  // Six guesses, four spare slots: four reads, none evicting layer l's experts.
  cache.prefetch_guess(l + 1, {4, 5, 6, 7, 8, 9});
  ExpertGuessStats g = cache.stats().guess;
  EXPECT_EQ(g.layers, 1u);
  EXPECT_EQ(g.experts, 6u);
  EXPECT_EQ(g.reads, 4u);
  EXPECT_GT(g.read_bytes, 0u);
  EXPECT_LE(g.read_bytes, 4 * cache.slot_bytes());
  const ExpertCacheStats before = cache.stats();
  // The guessed reads wait for layer l's reads to land: none has started
  // yet, and for_each starts them (it reads nothing else: layer l's reads
  // were all started by its prefetch).
  for (int e : {4, 5, 6, 7}) EXPECT_FALSE(cache.resident(l + 1, e)) << e;
  std::vector<int> count(now.size(), 0);
  int delivered = 0;
  cache.for_each(l, now, [&](size_t k, const ExpertWeights&) {
    ++count[k];
    if (++delivered == 1) {
      EXPECT_EQ(cache.stats().expert_bytes, before.expert_bytes) << "a guess read early";
    }
  });
  EXPECT_EQ(count, std::vector<int>(now.size(), 1));
  for (int e : now) EXPECT_TRUE(cache.resident(l, e)) << e;
  EXPECT_EQ(cache.stats().expert_bytes, before.expert_bytes + g.read_bytes);
  cache.settle();  // the guesses have landed: what is evicted next no longer depends on the disk
  for (int e : {4, 5, 6, 7}) EXPECT_TRUE(cache.resident(l + 1, e)) << e;

  // Layer l + 1 uses 4 and 5 (guessed and read), 8 (guessed, no slot) and 10.
  run_layer(m, cache, l + 1, {4, 5, 8, 10});
  g = cache.stats().guess;
  EXPECT_EQ(g.used, 3u);        // 4, 5 and 8 were guessed right
  EXPECT_EQ(g.reads_used, 2u);  // 4 and 5 were read because of the guess
  EXPECT_EQ(g.wasted_reads, 0u);
  // Eight other experts evict every slot: 6 and 7, never asked for, were wasted.
  run_layer(m, cache, l + 2, {0, 1, 2, 3, 4, 5, 6, 7});
  g = cache.stats().guess;
  EXPECT_EQ(g.wasted_reads, 2u);
  EXPECT_EQ(g.reads_used + g.wasted_reads, g.reads);
  EXPECT_GT(g.wasted_bytes, 0u);
  EXPECT_LE(g.wasted_bytes, g.read_bytes);
  EXPECT_LE(g.wasted_bytes, g.wasted_reads * cache.slot_bytes());
  EXPECT_FALSE(cache.resident(l + 1, 6));
  EXPECT_FALSE(cache.resident(l + 1, 7));
}

TEST(ExpertLookahead, AGuessWaitsUntilTheCurrentLayerHasItsSlots) {
  Model m(kTiny);
  const int l = m.config.first_k_dense_replace;
  // Five experts, four slots: layer l still needs a slot, so nothing is guessed into one.
  ExpertCache cache(m.config, m.checkpoint, m.files, 4, m.io, ExpertCachePolicyKind::kLru);
  cache.prefetch(l, {0, 1, 2, 3, 4});
  cache.prefetch_guess(l + 1, {5, 6});
  ExpertGuessStats g = cache.stats().guess;
  EXPECT_EQ(g.layers, 1u);
  EXPECT_EQ(g.reads, 0u);
  std::vector<int> count(5, 0);
  cache.for_each(l, {0, 1, 2, 3, 4}, [&](size_t k, const ExpertWeights&) { ++count[k]; });
  EXPECT_EQ(count, std::vector<int>(5, 1));
  // Exactly one layer's worth of slots: every slot is kept for layer l.
  run_layer(m, cache, l, {0, 1, 2, 3});
  cache.prefetch(l, {0, 1, 2, 3});
  cache.prefetch_guess(l + 1, {5, 6});
  for (int e : {0, 1, 2, 3}) EXPECT_TRUE(cache.resident(l, e)) << e;
  cache.for_each(l, {0, 1, 2, 3}, [](size_t, const ExpertWeights&) {});
  g = cache.stats().guess;
  EXPECT_EQ(g.reads, 0u);
  // A guess for the layer computing now (or an earlier one) reads nothing;
  // one two layers ahead reads into a slot layer l does not use.
  cache.prefetch(l, {0});
  cache.prefetch_guess(l, {7});
  EXPECT_EQ(cache.stats().guess.reads, 0u);
  cache.prefetch_guess(l + 2, {7});
  EXPECT_EQ(cache.stats().guess.reads, 1u);
  cache.for_each(l, {0}, [](size_t, const ExpertWeights&) {});
  run_layer(m, cache, l + 2, {7, 8});
  g = cache.stats().guess;
  EXPECT_EQ(g.used, 1u);  // 7 at l + 2 (the stale guess for layer l is never scored)
  EXPECT_EQ(g.reads_used, 1u);
}

TEST(ExpertLookahead, GuessesTwoLayersAheadSpareTheNearerOnesAndAddUp) {
  Model m(kTiny);
  const int l = m.config.first_k_dense_replace;
  ASSERT_GE(m.config.num_hidden_layers, l + 3);
  ExpertCache cache(m.config, m.checkpoint, m.files, 8, m.io, ExpertCachePolicyKind::kLru);
  cache.prefetch(l, {0, 1, 2, 3});
  cache.prefetch_guess(l + 1, {4, 5});
  cache.settle();  // every slot evictable but for what layer l and the guesses keep
  // Two slots left: 6 and 7 are read; 8 would have to evict layer l's
  // experts or layer l + 1's guesses.
  cache.prefetch_guess(l + 2, {6, 7, 8});
  ExpertGuessStats g = cache.stats().guess;
  EXPECT_EQ(g.layers, 2u);
  EXPECT_EQ(g.experts, 5u);
  EXPECT_EQ(g.reads, 4u);
  cache.for_each(l, {0, 1, 2, 3}, [](size_t, const ExpertWeights&) {});
  cache.settle();
  for (int e : {4, 5}) EXPECT_TRUE(cache.resident(l + 1, e)) << e;
  for (int e : {6, 7}) EXPECT_TRUE(cache.resident(l + 2, e)) << e;
  EXPECT_FALSE(cache.resident(l + 2, 8));
  // Layer l + 1 guesses l + 2 again: 8, already guessed, is read now (layer
  // l's slots are free to evict), and counted once.
  cache.prefetch(l + 1, {4, 5});
  cache.prefetch_guess(l + 2, {6, 8});
  g = cache.stats().guess;
  EXPECT_EQ(g.used, 2u);
  EXPECT_EQ(g.reads_used, 2u);
  EXPECT_EQ(g.layers, 2u);
  EXPECT_EQ(g.experts, 5u);
  EXPECT_EQ(g.reads, 5u);
  cache.for_each(l + 1, {4, 5}, [](size_t, const ExpertWeights&) {});
  cache.settle();
  EXPECT_TRUE(cache.resident(l + 2, 8));
  // Layer l + 2 uses 6 and 8 of the union {6, 7, 8}, and 9.
  run_layer(m, cache, l + 2, {6, 8, 9});
  g = cache.stats().guess;
  EXPECT_EQ(g.used, 4u);
  EXPECT_EQ(g.reads_used, 4u);
  EXPECT_EQ(g.wasted_reads, 0u);
}

// When the guessed layer routes, its wrong guesses still queued are
// cancelled: never read (bytes_read), their slots free again (the layer's
// misses take them instead of evicting), counted in the stats; the right
// ones are delivered with the checkpoint's bytes. The engine's threads are
// held so the guesses are still queued when the layer routes.
TEST(ExpertLookahead, WrongGuessesStillQueuedAreCancelledAndFreeTheirSlots) {
  Model m(kTiny);
  const int l = m.config.first_k_dense_replace;
  ASSERT_GE(m.config.num_hidden_layers, l + 2);
  ExpertCache cache(m.config, m.checkpoint, m.files, 8, m.io, ExpertCachePolicyKind::kLru);
  run_layer(m, cache, l, {0, 1, 2, 3});
  cache.settle();
  auto gate = std::make_unique<test::EngineGate>(m.io, *m.files[0]);
  // Layer l is resident: its for_each hands the four guesses to the engine at once.
  cache.prefetch(l, {0, 1, 2, 3});
  cache.prefetch_guess(l + 1, {4, 5, 6, 7});
  cache.for_each(l, {0, 1, 2, 3}, [](size_t, const ExpertWeights&) {});
  ExpertCacheStats s = cache.stats();
  ASSERT_EQ(s.guess.reads, 4u);
  // An expert's read bytes (aligned covering reads: they differ by expert).
  const ExpertIndex index(m.config, m.checkpoint);
  auto bytes = [&](int e) {
    uint64_t b = 0;
    for (const ExpertRead& r : index.reads(l + 1, e)) b += r.length;
    return b;
  };
  ASSERT_EQ(s.guess.read_bytes, bytes(4) + bytes(5) + bytes(6) + bytes(7));
  const uint64_t bytes0 = m.io.bytes_read(), expert_bytes0 = s.expert_bytes;
  // Layer l + 1 uses 4 and 5 (guessed) and 8 and 9: 6 and 7 are dropped
  // unread, and 8 and 9 take their slots rather than evicting layer l's.
  cache.prefetch(l + 1, {4, 5, 8, 9});
  s = cache.stats();
  EXPECT_EQ(s.guess.cancelled_reads, 2u);
  EXPECT_EQ(s.guess.cancelled_bytes, bytes(6) + bytes(7));
  EXPECT_EQ(s.guess.reads_used, 2u);
  for (int e : {0, 1, 2, 3}) EXPECT_TRUE(cache.resident(l, e)) << "evicted " << e;
  gate.reset();
  std::vector<int> count(4, 0);
  const std::vector<int> next = {4, 5, 8, 9};
  cache.for_each(l + 1, next, [&](size_t k, const ExpertWeights& w) {
    ++count[k];
    const std::string p = expert_tensor_prefix(m.config, l + 1, next[k]);
    EXPECT_TRUE(w.w1.is_mxfp4 ? same_as_file(m.checkpoint, p + "w1.weight_packed", w.w1.mx.packed)
                              : same_as_file(m.checkpoint, p + "w1.weight", w.w1.bf.data))
        << next[k];
  });
  EXPECT_EQ(count, std::vector<int>(4, 1));
  cache.settle();
  EXPECT_EQ(m.io.bytes_read() - bytes0, bytes(4) + bytes(5) + bytes(8) + bytes(9)) << "6 or 7 was read";
  EXPECT_FALSE(cache.resident(l + 1, 6));
  EXPECT_FALSE(cache.resident(l + 1, 7));
  for (int e : {0, 1, 2, 3}) EXPECT_TRUE(cache.resident(l, e)) << e;
  s = cache.stats();
  EXPECT_EQ(s.guess.wasted_reads, 0u) << "a cancelled read is not also wasted";
  EXPECT_EQ(s.expert_bytes, expert_bytes0 - bytes(6) - bytes(7) + bytes(8) + bytes(9)) << "two cancelled, two misses";
}

// Between two layers' expert phases (a dense layer at the start of a pass)
// a guess for any layer, even one before the last routed, reads at once:
// nothing else will start its reads.
TEST(ExpertLookahead, AGuessBetweenLayersReadsAtOnce) {
  Model m(kTiny);
  const int l = m.config.first_k_dense_replace;
  ASSERT_GE(m.config.num_hidden_layers, l + 3);
  ExpertCache cache(m.config, m.checkpoint, m.files, 8, m.io, ExpertCachePolicyKind::kLru);
  run_layer(m, cache, l + 2, {0, 1, 2, 3});
  const uint64_t before = m.io.bytes_read();
  cache.prefetch_guess(l, {4, 5});
  const ExpertGuessStats guessed = cache.stats().guess;
  EXPECT_EQ(guessed.reads, 2u);
  // Nothing flushes held reads here: they land only if they were started.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (m.io.bytes_read() - before < guessed.read_bytes && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(m.io.bytes_read() - before, guessed.read_bytes) << "the guessed reads did not start";
  cache.settle();
  EXPECT_TRUE(cache.resident(l, 4));
  EXPECT_TRUE(cache.resident(l, 5));
  run_layer(m, cache, l, {4, 6});
  const ExpertGuessStats g = cache.stats().guess;
  EXPECT_EQ(g.used, 1u);
  EXPECT_EQ(g.reads_used, 1u);
}
