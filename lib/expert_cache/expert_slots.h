// The slot table of the routed-expert cache: which expert each slot holds,
// which slots a layer is using (never evicted), which are free, the
// eviction policy that picks a victim when none is, and what the read that
// filled each slot was (its bytes; whether --expert-lookahead guessed it). ExpertCache keeps the
// bytes and the reads; this is every decision about slots, so the replay
// bench (expert_cache/expert_cache_replay.h) drives the same code without I/O.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "expert_cache/expert_cache_policy.h"

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

  // The read that fills the slot started: its bytes, and whether a guess
  // (ExpertCache::prefetch_guess) rather than a layer asked for it.
  void note_read(int slot, uint64_t bytes, bool guessed);
  uint64_t read_bytes(int slot) const { return read_bytes_[static_cast<size_t>(slot)]; }
  bool guessed(int slot) const { return guessed_[static_cast<size_t>(slot)] != 0; }
  // A layer asked for the slot's guessed expert: the guess was worth its
  // read. Returns whether the slot was still marked guessed.
  bool claim_guess(int slot);

  // The slots from `keep` on are lent (ExpertCache::lend): the experts they
  // hold are dropped and take() hands out only the first `keep` until
  // reclaim(). None of them may be in use. Returns how many were lent.
  uint64_t lend(uint64_t keep);
  // The lent slots are free again (the lowest handed out first).
  void reclaim();
  uint64_t lent() const { return lent_; }

 private:
  std::vector<int64_t> key_;  // -1: free
  std::vector<int> in_use_;
  std::unordered_map<int64_t, int> resident_;  // key -> slot, bytes arrived
  std::vector<int> free_;
  std::unique_ptr<ExpertCachePolicy> policy_;
  std::vector<uint64_t> read_bytes_;  // bytes of the read that filled the slot
  std::vector<uint8_t> guessed_;      // filled by a guess no layer has asked for yet
  uint64_t lent_ = 0;                 // the last lent_ slots are lent (in no list, holding nothing)
};

}  // namespace k3
