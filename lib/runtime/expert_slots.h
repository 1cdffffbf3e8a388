// The slot table of the routed-expert cache: which expert each slot holds,
// which slots a layer is using (never evicted), which are free, and the
// eviction policy that picks a victim when none is. ExpertCache keeps the
// bytes and the reads; this is every decision about slots, so the replay
// bench (runtime/expert_cache_replay.h) drives the same code without I/O.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "runtime/expert_cache_policy.h"

namespace k3 {

class ExpertSlots {
 public:
  ExpertSlots(uint64_t slots, std::unique_ptr<ExpertCachePolicy> policy);

  uint64_t size() const { return key_.size(); }
  // The slot whose bytes hold `key` (it has arrived), or -1.
  int find(int64_t key) const;
  int64_t key(int slot) const { return key_[static_cast<size_t>(slot)]; }

  // A slot for `key`: a free one, else the policy's victim among the slots
  // that hold an expert, are not in use and hold none of `keep`; the victim's
  // expert is dropped. The slot is in use until release() or drop(). -1 when
  // no slot can be taken now.
  int take(int64_t key, const std::vector<int64_t>* keep = nullptr);
  // The bytes of the slot's expert have arrived: find() returns it from now.
  void make_resident(int slot);
  // A layer uses the slot's expert: not evictable until release().
  void pin(int slot) { ++in_use_[static_cast<size_t>(slot)]; }
  // The expert was delivered (or arrived for nobody): evictable again, and
  // the policy counts a use.
  void release(int slot);
  // The slot holds nothing any more (its read failed): back to the free list.
  void drop(int slot);

 private:
  std::vector<int64_t> key_;  // -1: free
  std::vector<int> in_use_;
  std::unordered_map<int64_t, int> resident_;  // key -> slot, bytes arrived
  std::vector<int> free_;
  std::unique_ptr<ExpertCachePolicy> policy_;
};

}  // namespace k3
