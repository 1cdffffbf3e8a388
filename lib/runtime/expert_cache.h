// The routed-expert cache of a model run in a memory budget.
//
// Experts are read straight from the shards with O_DIRECT into an arena of
// cache slots (one slot = one expert's tensors, ExpertIndex's reads); when
// none is free, the eviction policy (runtime/expert_cache_policy.h, through
// ExpertSlots) chooses which cached expert makes room.
// prefetch() starts the reads of a layer's selected experts as soon as the
// routing is known; for_each() then hands every selected expert to the model
// as soon as its bytes have arrived (resident ones first, while the reads
// run), issuing the misses prefetch() had no slot for as slots free up. An
// expert a layer is using is never evicted. The bytes delivered are always
// the checkpoint's bytes, so the output does not depend on the cache size.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/aligned_buffer.h"
#include "io/direct_file.h"
#include "io/read_engine.h"
#include "model/config.h"
#include "model/weights.h"
#include "runtime/expert_cache_policy.h"
#include "runtime/expert_index.h"
#include "runtime/expert_slots.h"

namespace k3 {

class Checkpoint;

struct ExpertCacheStats {
  uint64_t expert_bytes = 0;        // read while running
  uint64_t load_bytes = 0;          // read at start (a cache that holds every expert)
  uint64_t experts_requested = 0;   // (layer, expert) deliveries asked for
  uint64_t experts_resident = 0;    // of those, already resident when for_each began
  double io_wait_seconds = 0;       // compute thread blocked waiting for expert bytes
};

class ExpertCache {
 public:
  // An arena of `slots` slots. The shard files (parallel to the checkpoint's
  // shards) and `io` must outlive the cache. A cache with a slot for every
  // routed expert is filled here: the run is then fully resident. Throws
  // k3::Error (kBadModel for a missing expert tensor or a bad scale byte,
  // kIo for read failures). `policy` picks the victims (not the bytes).
  ExpertCache(const ModelConfig& config, const Checkpoint& checkpoint,
              const std::vector<std::unique_ptr<DirectFile>>& shard_files, uint64_t slots, ReadEngine& io,
              ExpertCachePolicyKind policy = kDefaultExpertCachePolicy);
  ~ExpertCache();  // waits for reads still in flight (they write into the arena)
  ExpertCache(const ExpertCache&) = delete;
  ExpertCache& operator=(const ExpertCache&) = delete;

  // Starts reading those of `experts` that are neither resident nor already
  // being read, while free or evictable slots last (never evicting one of
  // `experts`). A hint: changes nothing but timing.
  void prefetch(int layer, const std::vector<int>& experts);

  // Calls on_ready(k, w) exactly once for every experts[k], as its bytes
  // become available, and returns when all were delivered. Throws
  // k3::Error(kIo) with the first read error (after every read of the call
  // has landed; no further expert is delivered after it), or rethrows what
  // on_ready threw.
  void for_each(int layer, const std::vector<int>& experts,
                const std::function<void(size_t k, const ExpertWeights& w)>& on_ready);

  uint64_t slots() const { return slots_.size(); }
  uint64_t slot_bytes() const { return slot_bytes_; }
  uint64_t arena_bytes() const { return slot_bytes_ * slots_.size(); }
  ExpertCachePolicyKind policy() const { return policy_; }
  // Whether (layer, expert) is in the cache now (not counting reads in flight).
  bool resident(int layer, int expert) const;
  ExpertCacheStats stats() const;

 private:
  struct Arrival {
    int64_t key;
    int slot;
    std::string error;
  };
  // A slot for `key` (ExpertSlots::take: a free one, else the policy's
  // victim, never one in use or in `keep`); -1 when there is none.
  int take_slot(int64_t key, const std::vector<int64_t>* keep = nullptr);
  // Starts reading (layer, expert) into `slot`; its Arrival comes later.
  void issue_read(int layer, int expert, int slot);
  // An arrival nobody is waiting for (a prefetched expert of a call that
  // failed): kept as an ordinary cached expert, or its slot freed.
  void keep_stray(const Arrival& a);
  void preload();
  uint8_t* slot_base(int slot) { return arena_.data() + static_cast<uint64_t>(slot) * slot_bytes_; }
  ExpertWeights bind(int layer, int expert, const uint8_t* base) const;
  void check_scales(int layer, int expert, const uint8_t* base) const;

  ModelConfig config_;
  ExpertIndex index_;
  const std::vector<std::unique_ptr<DirectFile>>& shard_files_;
  ReadEngine& io_;

  uint64_t slot_bytes_ = 0;
  AlignedBuffer arena_;
  ExpertCachePolicyKind policy_;
  ExpertSlots slots_;                // key (layer * num_experts + expert) per slot, in use, free, victims
  std::vector<ExpertWeights> weights_;  // per slot: its expert's tensors in the arena
  std::mutex arrivals_mu_;
  std::condition_variable arrivals_cv_;
  std::deque<Arrival> arrivals_;
  std::unordered_map<int64_t, int> pending_;  // reads issued and not yet taken from arrivals_: key -> slot

  mutable std::mutex stats_mu_;
  ExpertCacheStats stats_;
};

}  // namespace k3
