// The routed-expert cache on its own, over the tiny fixture: every requested
// expert is delivered exactly once with the checkpoint's bytes at any arena
// size (down to one slot) and under every eviction policy, the LRU policy
// evicts the least recently used, a prefetch never evicts an expert the same
// layer is about to use, a cache with a slot per expert is filled at start, a
// read error is reported as kIo without breaking the cache, and the replay
// bench's hits (expert_cache/expert_cache_replay.h) are the cache's own.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>

#include "checkpoint/checkpoint.h"
#include "common/error.h"
#include "expert_cache/expert_cache.h"
#include "expert_cache/expert_cache_replay.h"
#include "io/direct_file.h"
#include "io/read_engine.h"
#include "lib/huge_pages.h"
#include "model/config.h"
#include "model/tensor_manifest.h"
#include "runtime/expert_cache_fixture.h"

namespace fs = std::filesystem;
using namespace k3;

namespace {

const std::string kTiny = std::string(K3_TEST_DATA) + "/k3-tiny";

using Model = test::ExpertCacheModel;

// The bytes of a tensor as the shard file holds them.
std::vector<uint8_t> file_bytes(const Checkpoint& ck, const std::string& name) {
  const TensorLocation& loc = ck.at(name);
  std::vector<uint8_t> out(loc.info->nbytes);
  std::ifstream f(ck.shards()[loc.shard].path, std::ios::binary);
  f.seekg(static_cast<std::streamoff>(loc.info->offset));
  f.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size()));
  EXPECT_TRUE(f.good()) << name;
  return out;
}

// Whether w holds exactly the checkpoint's bytes of (layer, expert).
bool holds_checkpoint_bytes(const Model& m, int layer, int expert, const ExpertWeights& w) {
  const std::string p = expert_tensor_prefix(m.config, layer, expert);
  auto same = [&](const std::string& name, const void* data) {
    const std::vector<uint8_t> want = file_bytes(m.checkpoint, name);
    return data && std::memcmp(want.data(), data, want.size()) == 0;
  };
  const std::pair<const char*, const ExpertMatrix*> mats[] = {{"w1", &w.w1}, {"w3", &w.w3}, {"w2", &w.w2}};
  for (const auto& [name, mat] : mats) {
    if (mat->is_mxfp4) {
      if (!same(p + name + ".weight_packed", mat->mx.packed) || !same(p + name + ".weight_scale", mat->mx.scales))
        return false;
    } else if (!same(p + name + ".weight", mat->bf.data)) {
      return false;
    }
  }
  return true;
}

// Runs for_each and checks that each expert came exactly once with its
// bytes; returns the delivery order (indices k).
std::vector<size_t> deliver(Model& m, ExpertCache& cache, int layer, const std::vector<int>& experts) {
  std::vector<int> count(experts.size(), 0);
  std::vector<size_t> order;
  cache.for_each(layer, experts, [&](size_t k, const ExpertWeights& w) {
    ASSERT_LT(k, experts.size());
    ++count[k];
    order.push_back(k);
    EXPECT_TRUE(holds_checkpoint_bytes(m, layer, experts[k], w)) << "layer " << layer << " expert " << experts[k];
  });
  for (size_t k = 0; k < experts.size(); ++k)
    EXPECT_EQ(count[k], 1) << "layer " << layer << " expert " << experts[k] << " delivered " << count[k] << " times";
  return order;
}

int first_moe(const ModelConfig& c) { return c.first_k_dense_replace; }

}  // namespace

TEST(ExpertCache, EveryExpertOnceWithTheCheckpointsBytesAtAnyArenaSize) {
  Model m(kTiny);
  const ModelConfig& c = m.config;
  ASSERT_GT(c.num_hidden_layers, first_moe(c));
  const uint64_t top_k = c.num_experts_per_token;
  for (uint64_t slots : {uint64_t{1}, top_k - 1, top_k, 2 * top_k}) {
    for (bool prefetch : {false, true}) {
      const ExpertCachePolicyKind policy = expert_cache_policy_kinds()[(slots + prefetch) % 4];
      ExpertCache cache(c, m.checkpoint, m.files, slots, m.io, policy);
      EXPECT_EQ(cache.slots(), slots);
      EXPECT_EQ(cache.arena_bytes(), slots * cache.slot_bytes());
      std::mt19937 rng(static_cast<unsigned>(slots * 2 + prefetch));
      uint64_t requested = 0;
      for (int step = 0; step < 3; ++step)
        for (int l = first_moe(c); l < c.num_hidden_layers; ++l) {
          // top-k distinct experts, in random order.
          std::vector<int> all(c.num_experts);
          for (int e = 0; e < c.num_experts; ++e) all[e] = e;
          std::shuffle(all.begin(), all.end(), rng);
          std::vector<int> chosen(all.begin(), all.begin() + top_k);
          if (prefetch) cache.prefetch(l, chosen);
          deliver(m, cache, l, chosen);
          requested += chosen.size();
        }
      const ExpertCacheStats s = cache.stats();
      EXPECT_EQ(s.experts_requested, requested);
      EXPECT_LE(s.experts_resident, requested);
      EXPECT_GT(s.expert_bytes, 0u);
      EXPECT_EQ(s.load_bytes, 0u);
    }
  }
}

// The arena every expert read lands in asks for transparent huge pages (an
// O_DIRECT read then pins a few pages, not hundreds).
TEST(ExpertCache, TheArenaAsksForHugePages) {
  if (!test::kernel_has_thp()) GTEST_SKIP() << "this kernel has no transparent huge pages";
  Model m(kTiny);
  const uint64_t before = test::madvised_huge_bytes();
  ExpertCache cache(m.config, m.checkpoint, m.files, 8, m.io);
  EXPECT_GE(test::madvised_huge_bytes() - before, cache.arena_bytes());
}

TEST(ExpertCache, EvictsTheLeastRecentlyUsed) {
  Model m(kTiny);
  const int l = first_moe(m.config);
  ExpertCache cache(m.config, m.checkpoint, m.files, 3, m.io, ExpertCachePolicyKind::kLru);
  for (int e : {0, 1, 2}) deliver(m, cache, l, {e});
  for (int e : {0, 1, 2}) EXPECT_TRUE(cache.resident(l, e));
  deliver(m, cache, l, {0});  // 0 used again: 1 is now the oldest
  deliver(m, cache, l, {3});
  EXPECT_FALSE(cache.resident(l, 1));
  EXPECT_TRUE(cache.resident(l, 0));
  EXPECT_TRUE(cache.resident(l, 2));
  EXPECT_TRUE(cache.resident(l, 3));
  deliver(m, cache, l, {4});  // then 2
  EXPECT_FALSE(cache.resident(l, 2));
  EXPECT_TRUE(cache.resident(l, 0));
  // A hit counts as resident, a miss does not.
  const ExpertCacheStats before = cache.stats();
  deliver(m, cache, l, {0, 5});
  const ExpertCacheStats after = cache.stats();
  EXPECT_EQ(after.experts_requested - before.experts_requested, 2u);
  EXPECT_EQ(after.experts_resident - before.experts_resident, 1u);
}

// Where the disk idles: each layer's expert phase runs from its prefetch to
// the end of its for_each; the gap to the next layer's prefetch counts as
// between layers, and the gap to a layer at or before the last one as the
// token boundary. Each phase's busy seconds are within its seconds.
TEST(ExpertCache, PhasesSplitTheTimeAroundTheMoeLayers) {
  Model m(kTiny);
  const int l = first_moe(m.config);
  ExpertCache cache(m.config, m.checkpoint, m.files, 8, m.io, ExpertCachePolicyKind::kLru);
  auto layer = [&](int layer, const std::vector<int>& experts) {
    cache.prefetch(layer, experts);
    usleep(20000);  // the expert phase lasts at least this
    deliver(m, cache, layer, experts);
  };
  layer(l, {0, 1});
  ExpertPhaseStats p = cache.stats().phases;
  EXPECT_GE(p.experts_seconds, 0.02);
  EXPECT_GT(p.experts_busy_seconds, 0) << "two experts were read in the phase";
  EXPECT_LE(p.experts_busy_seconds, p.experts_seconds + 1e-3);
  EXPECT_EQ(p.between_seconds, 0);
  // A snapshot counts the gap still open since the last layer as boundary
  // time so far: here microseconds. The bounds below leave 15 ms for a
  // loaded machine's scheduling, half the shortest gap the test tells apart.
  EXPECT_LT(p.boundary_seconds, 0.015);
  usleep(30000);
  layer(l + 1, {2});
  p = cache.stats().phases;
  EXPECT_GE(p.experts_seconds, 0.04);
  EXPECT_GE(p.between_seconds, 0.03);
  EXPECT_LT(p.between_seconds, 0.03 + p.experts_seconds);
  EXPECT_LE(p.between_busy_seconds, p.between_seconds + 1e-3);
  EXPECT_LT(p.boundary_seconds, 0.015) << "the 30 ms gap closed as between layers";
  usleep(40000);
  layer(l, {0, 1});  // a new pass
  p = cache.stats().phases;
  EXPECT_GE(p.boundary_seconds, 0.04);
  EXPECT_LT(p.between_seconds, p.boundary_seconds) << "the boundary is not counted as between layers";
  EXPECT_LE(p.boundary_busy_seconds, p.boundary_seconds + 1e-3);
  // Nothing was read across the boundary (an I/O thread may still be
  // finishing the last read's bookkeeping when for_each returns).
  EXPECT_LT(p.boundary_busy_seconds, 0.015);
}

// A run's decode figures are the difference of two snapshots, the first
// taken after the prompt's pass: the boundary gap that spans it counts only
// its part after the snapshot, not the prompt pass's tail before it.
TEST(ExpertCache, ASnapshotBetweenPassesSplitsTheBoundaryGap) {
  Model m(kTiny);
  const int l = first_moe(m.config);
  ExpertCache cache(m.config, m.checkpoint, m.files, 8, m.io, ExpertCachePolicyKind::kLru);
  deliver(m, cache, l, {0, 1});  // the prompt's pass
  usleep(40000);                 // its tail: head, sampling
  const ExpertPhaseStats a = cache.stats().phases;
  EXPECT_GE(a.boundary_seconds, 0.04) << "the open gap counts as boundary so far";
  usleep(10000);  // the next pass up to its first MoE layer
  deliver(m, cache, l, {2});
  const ExpertPhaseStats b = cache.stats().phases;
  EXPECT_GE(b.boundary_seconds - a.boundary_seconds, 0.01);
  EXPECT_LT(b.boundary_seconds - a.boundary_seconds, 0.04) << "the tail before the snapshot is not the decode's";
}

// A layer-major chunk asks for a layer's experts once (prefetch) and takes
// them in groups, a for_each call each: the calls are one expert phase (the
// time between them, where the chunk adds a group's outputs, is not a pass
// boundary), and an expert read since the prefetch is no resident hit in a
// later group's call. A prefetch of the same layer again is a new pass.
TEST(ExpertCache, AChunksGroupsOnALayerAreOnePhase) {
  Model m(kTiny);
  const int l = first_moe(m.config);
  ExpertCache cache(m.config, m.checkpoint, m.files, 8, m.io, ExpertCachePolicyKind::kLru);
  deliver(m, cache, l, {0});  // a pass before: 0 resident
  const ExpertCacheStats before = cache.stats();
  cache.prefetch(l, {0, 1, 2, 3});  // every expert the chunk's rows chose: 1, 2, 3 read
  deliver(m, cache, l, {0, 3});     // the first group waits for 3, read last
  usleep(30000);                    // the chunk adds the group's outputs
  deliver(m, cache, l, {1, 2});     // read since the prefetch
  const ExpertCacheStats after = cache.stats();
  EXPECT_EQ(after.experts_requested - before.experts_requested, 4u);
  EXPECT_EQ(after.experts_resident - before.experts_resident, 1u) << "0 alone was resident";
  EXPECT_GE(after.phases.experts_seconds - before.phases.experts_seconds, 0.03);
  EXPECT_LT(after.phases.boundary_seconds - before.phases.boundary_seconds, 0.025)
      << "the gap between the groups counted as a pass boundary";
  usleep(40000);
  cache.prefetch(l, {1, 2});  // the next pass
  deliver(m, cache, l, {1, 2});
  const ExpertCacheStats next = cache.stats();
  EXPECT_GE(next.phases.boundary_seconds - after.phases.boundary_seconds, 0.03);
  EXPECT_EQ(next.experts_resident - after.experts_resident, 2u);
}

TEST(ExpertCache, PrefetchNeverEvictsAnExpertTheLayerUses) {
  Model m(kTiny);
  const int l = first_moe(m.config);
  ExpertCache cache(m.config, m.checkpoint, m.files, 4, m.io, ExpertCachePolicyKind::kLru);
  for (int e : {0, 1, 2, 3}) deliver(m, cache, l, {e});  // 0 is the oldest
  // The layer will use 0 (the oldest), 5 and 6: the reads of 5 and 6 take
  // the slots of 1 and 2, never 0's.
  cache.prefetch(l, {0, 5, 6});
  EXPECT_TRUE(cache.resident(l, 0));
  EXPECT_FALSE(cache.resident(l, 1));
  EXPECT_FALSE(cache.resident(l, 2));
  EXPECT_TRUE(cache.resident(l, 3));
  const ExpertCacheStats before = cache.stats();
  deliver(m, cache, l, {6, 0, 5});
  const ExpertCacheStats after = cache.stats();
  EXPECT_EQ(after.experts_resident - before.experts_resident, 1u);  // 0; 5 and 6 were already being read
  for (int e : {0, 3, 5, 6}) EXPECT_TRUE(cache.resident(l, e)) << e;
  // No slot to spare (every slot holds an expert the layer uses): the
  // prefetch reads nothing and for_each still delivers all of them.
  cache.prefetch(l, {0, 3, 5, 6, 7});
  for (int e : {0, 3, 5, 6}) EXPECT_TRUE(cache.resident(l, e)) << e;
  deliver(m, cache, l, {0, 3, 5, 6, 7});
  // A prefetch whose layer is not the next to ask (a failed step): its
  // arrival is kept or still pending, and the expert is delivered once later.
  cache.prefetch(l + 1, {9});
  deliver(m, cache, l, {1});
  deliver(m, cache, l + 1, {9, 10});
}

TEST(ExpertCache, ASlotForEveryExpertIsFilledAtStart) {
  Model m(kTiny);
  const ModelConfig& c = m.config;
  const uint64_t all = static_cast<uint64_t>(c.num_hidden_layers - first_moe(c)) * c.num_experts;
  ExpertCache cache(c, m.checkpoint, m.files, all, m.io);
  for (int l = first_moe(c); l < c.num_hidden_layers; ++l)
    for (int e = 0; e < c.num_experts; ++e) EXPECT_TRUE(cache.resident(l, e));
  EXPECT_GE(cache.stats().load_bytes, all * cache.slot_bytes() / 2);
  deliver(m, cache, c.num_hidden_layers - 1, {c.num_experts - 1, 0});
  const ExpertCacheStats s = cache.stats();
  EXPECT_EQ(s.experts_resident, 2u);
  EXPECT_EQ(s.expert_bytes, 0u);
}

TEST(ExpertCache, AReadErrorIsReportedAndTheCacheStillWorks) {
  const fs::path dir = fs::temp_directory_path() / ("k3-expert-cache-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& f : fs::directory_iterator(kTiny)) fs::copy_file(f.path(), dir / f.path().filename());
  Model m(dir.string());
  const ModelConfig& c = m.config;
  // The expert whose first tensor lies last in its shard, and one before it
  // in the same shard.
  auto first_tensor = [&](int l, int e) {
    const std::string p = expert_tensor_prefix(c, l, e);
    const TensorLocation* best = nullptr;
    for (const auto& [name, loc] : m.checkpoint.tensors())
      if (name.compare(0, p.size(), p) == 0 && (!best || loc.info->offset < best->info->offset)) best = &loc;
    return *best;
  };
  int bad_l = -1, bad_e = -1;
  TensorLocation bad{};
  for (int l = first_moe(c); l < c.num_hidden_layers; ++l)
    for (int e = 0; e < c.num_experts; ++e) {
      const TensorLocation t = first_tensor(l, e);
      if (!bad.info || t.shard > bad.shard || (t.shard == bad.shard && t.info->offset > bad.info->offset)) {
        bad = t;
        bad_l = l;
        bad_e = e;
      }
    }
  int good_l = -1, good_e = -1;
  for (int l = first_moe(c); l < c.num_hidden_layers && good_l < 0; ++l)
    for (int e = 0; e < c.num_experts && good_l < 0; ++e) {
      const TensorLocation t = first_tensor(l, e);
      if (t.shard == bad.shard && t.info->offset + 3 * 4096 < bad.info->offset) {
        good_l = l;
        good_e = e;
      }
    }
  ASSERT_GE(good_l, 0);
  ExpertCache cache(c, m.checkpoint, m.files, 2, m.io);
  fs::resize_file(m.checkpoint.shards()[bad.shard].path, bad.info->offset);
  try {
    cache.for_each(bad_l, {bad_e}, [](size_t, const ExpertWeights&) { ADD_FAILURE() << "delivered unread bytes"; });
    ADD_FAILURE() << "no error for a truncated shard";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kIo);
    EXPECT_NE(std::string(e.what()).find(m.checkpoint.shards()[bad.shard].file), std::string::npos) << e.what();
  }
  EXPECT_FALSE(cache.resident(bad_l, bad_e));
  // Both slots are usable again.
  deliver(m, cache, good_l, {good_e});
  EXPECT_TRUE(cache.resident(good_l, good_e));
  fs::remove_all(dir);
}

TEST(ExpertCache, TheReplayCountsTheCachesOwnHits) {
  // One I/O thread: reads arrive in the order issued, as the replay assumes.
  Model m(kTiny);
  ReadEngine io1{1};
  const ModelConfig& c = m.config;
  std::mt19937 rng(11);
  ExpertCallSequence seq;
  seq.passes = 4;
  for (int t = 0; t < 4; ++t)
    for (int l = first_moe(c); l < c.num_hidden_layers; ++l) {
      std::vector<int> all(c.num_experts);
      for (int e = 0; e < c.num_experts; ++e) all[e] = e;
      std::shuffle(all.begin(), all.begin() + 8, rng);  // experts 0..7 only: layers reuse some
      seq.calls.push_back({l, std::vector<int>(all.begin(), all.begin() + c.num_experts_per_token)});
    }
  const ExpertCacheShape shape = ExpertCacheShape::of(c);
  for (ExpertCachePolicyKind k : expert_cache_policy_kinds())
    for (uint64_t slots : {uint64_t{6}, uint64_t{30}}) {
      ExpertCache cache(c, m.checkpoint, m.files, slots, io1, k);
      size_t delivered = 0;
      for (const ExpertCall& call : seq.calls) {
        cache.prefetch(call.layer, call.experts);
        cache.for_each(call.layer, call.experts, [&](size_t, const ExpertWeights&) { ++delivered; });
      }
      const ReplayResult r = replay_expert_cache(seq, shape, slots, k);
      EXPECT_EQ(delivered, r.requests);
      EXPECT_EQ(cache.stats().experts_requested, r.requests);
      EXPECT_EQ(cache.stats().experts_resident, r.hits) << expert_cache_policy_name(k) << " " << slots << " slots";
      // Something to compare: LRU's 30 slots are fewer than a pass's 48 experts.
      if (slots == 30 && k != ExpertCachePolicyKind::kLru) EXPECT_GT(r.hits, 0u) << expert_cache_policy_name(k);
    }
}

// The slots above the floor lent to a prefill's chunk (ExpertCache::lend):
// their experts are dropped, the cache runs on the floor (still delivering
// the checkpoint's bytes) until reclaim(), and then fills every slot again.
TEST(ExpertCache, LentSlotsHoldNothingUntilGivenBack) {
  Model m(kTiny);
  const ModelConfig& c = m.config;
  const uint64_t keep = c.num_experts_per_token, slots = 3 * keep;
  ExpertCache cache(c, m.checkpoint, m.files, slots, m.io, ExpertCachePolicyKind::kLru);
  auto resident_count = [&] {
    uint64_t n = 0;
    for (int l = first_moe(c); l < c.num_hidden_layers; ++l)
      for (int e = 0; e < c.num_experts; ++e) n += cache.resident(l, e) ? 1 : 0;
    return n;
  };
  // Distinct experts over the MoE layers, one at a time.
  auto deliver_distinct = [&](uint64_t count, int first_expert) {
    for (uint64_t i = 0; i < count; ++i) {
      const int l = first_moe(c) + static_cast<int>(i) % (c.num_hidden_layers - first_moe(c));
      deliver(m, cache, l, {(first_expert + static_cast<int>(i)) % c.num_experts});
    }
  };
  deliver_distinct(slots, 0);
  EXPECT_EQ(resident_count(), slots);
  EXPECT_EQ(cache.lend(keep), (slots - keep) * cache.slot_bytes());
  EXPECT_EQ(cache.lent_slots(), slots - keep);
  EXPECT_LE(resident_count(), keep);
  deliver_distinct(slots, 5);  // the prefill's chunk: the floor only
  EXPECT_LE(resident_count(), keep);
  EXPECT_EQ(cache.lend(keep), (slots - keep) * cache.slot_bytes()) << "lending again lends the same slots";
  cache.reclaim();
  EXPECT_EQ(cache.lent_slots(), 0u);
  deliver_distinct(slots, 9);  // decode: every slot fills again
  EXPECT_EQ(resident_count(), slots);
  const ExpertCacheStats s = cache.stats();
  EXPECT_EQ(s.lends, 2u);
  EXPECT_EQ(s.reclaims, 1u);
  EXPECT_EQ(s.lent_bytes, (slots - keep) * cache.slot_bytes());
  EXPECT_EQ(cache.lend(slots), 0u) << "nothing above every slot";
}
