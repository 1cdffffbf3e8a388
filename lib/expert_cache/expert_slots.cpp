#include "expert_cache/expert_slots.h"

#include <algorithm>

namespace k3 {

ExpertSlots::ExpertSlots(uint64_t slots, std::unique_ptr<ExpertCachePolicy> policy)
    : key_(slots, -1), in_use_(slots, 0), policy_(std::move(policy)), read_bytes_(slots, 0), guessed_(slots, 0) {
  // Handed out from the back: slot 0 first.
  for (uint64_t i = slots; i-- > 0;) free_.push_back(static_cast<int>(i));
}

int ExpertSlots::find(int64_t key) const {
  auto it = resident_.find(key);
  return it == resident_.end() ? -1 : it->second;
}

int ExpertSlots::take(int64_t key, const std::vector<int64_t>* keep) {
  int slot = -1;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = policy_->victim(key, [&](int s) {
      const size_t i = static_cast<size_t>(s);
      return in_use_[i] == 0 && key_[i] >= 0 &&
             !(keep && std::find(keep->begin(), keep->end(), key_[i]) != keep->end());
    });
    if (slot < 0) return -1;
    resident_.erase(key_[static_cast<size_t>(slot)]);
    policy_->erase(slot);
  }
  key_[static_cast<size_t>(slot)] = key;
  in_use_[static_cast<size_t>(slot)] = 1;  // not evictable until its bytes are delivered
  policy_->insert(slot, key);
  return slot;
}

void ExpertSlots::make_resident(int slot) { resident_[key_[static_cast<size_t>(slot)]] = slot; }

void ExpertSlots::release(int slot) {
  in_use_[static_cast<size_t>(slot)] = 0;
  policy_->touch(slot);
}

void ExpertSlots::drop(int slot) {
  const size_t i = static_cast<size_t>(slot);
  if (key_[i] >= 0) {
    resident_.erase(key_[i]);
    policy_->erase(slot);
  }
  key_[i] = -1;
  in_use_[i] = 0;
  guessed_[i] = 0;  // nothing left to waste: the next read into it is not an eviction
  free_.push_back(slot);
}

void ExpertSlots::note_read(int slot, uint64_t bytes, bool guessed) {
  read_bytes_[static_cast<size_t>(slot)] = bytes;
  guessed_[static_cast<size_t>(slot)] = guessed ? 1 : 0;
}

bool ExpertSlots::claim_guess(int slot) {
  const bool was = guessed_[static_cast<size_t>(slot)] != 0;
  guessed_[static_cast<size_t>(slot)] = 0;
  return was;
}

uint64_t ExpertSlots::lend(uint64_t keep) {
  reclaim();  // lending twice lends the same slots
  if (keep >= key_.size()) return 0;
  for (size_t i = keep; i < key_.size(); ++i)
    if (key_[i] >= 0) drop(static_cast<int>(i));
  free_.erase(std::remove_if(free_.begin(), free_.end(), [&](int s) { return static_cast<uint64_t>(s) >= keep; }),
              free_.end());
  lent_ = key_.size() - keep;
  return lent_;
}

void ExpertSlots::reclaim() {
  // Handed out from the back: the lowest lent slot first, as at the start.
  for (uint64_t i = key_.size(); lent_ > 0; --lent_) free_.push_back(static_cast<int>(--i));
}

}  // namespace k3
