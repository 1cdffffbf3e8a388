#include "gpu/latent_cache_slots.h"

#include <algorithm>

namespace k3 {

void LatentCacheSlots::configure(size_t slots, size_t positions) {
  slots_.assign(positions > 0 ? slots : 0, Slot{});
  positions_ = slots_.empty() ? 0 : positions;
  pending_.clear();
}

bool LatentCacheSlots::place(std::span<const uint64_t> generations, std::span<const size_t> positions,
                             std::vector<Placement>& out) {
  pending_.clear();
  out.assign(generations.size(), Placement{});
  if (generations.size() > slots_.size()) return false;
  for (size_t p : positions)
    if (p > positions_) return false;
  const uint64_t call = ++calls_;
  // First the slots already holding this call's caches, so that none of
  // them is taken for another of its caches.
  std::vector<Slot*> held(generations.size(), nullptr);
  for (size_t i = 0; i < generations.size(); ++i)
    for (Slot& s : slots_)
      if (s.generation != 0 && s.generation == generations[i]) {
        held[i] = &s;
        s.used = call;
        break;
      }
  for (size_t i = 0; i < generations.size(); ++i) {
    Slot* slot = held[i];
    size_t from = 0;
    if (slot != nullptr && slot->rows <= positions[i]) {
      from = slot->rows;  // the same rows and perhaps more: only the appended ones are copied
    } else if (slot == nullptr) {
      // A free slot, else the one unused longest that this call needs not.
      for (Slot& s : slots_) {
        if (s.used == call) continue;
        if (slot == nullptr || s.generation == 0 || (slot->generation != 0 && s.used < slot->used)) slot = &s;
        if (slot->generation == 0) break;
      }
    }
    slot->generation = from > 0 ? slot->generation : 0;  // copied whole: nothing of the old copy stays
    slot->used = call;
    out[i] = {static_cast<size_t>(slot - slots_.data()), from};
    pending_.push_back({out[i].slot, generations[i], positions[i]});
  }
  return true;
}

void LatentCacheSlots::commit() {
  for (const Pending& p : pending_) {
    slots_[p.slot].generation = p.generation;
    slots_[p.slot].rows = p.rows;
  }
  pending_.clear();
}

void LatentCacheSlots::forget() {
  for (Slot& s : slots_) s = Slot{};
  pending_.clear();
}

}  // namespace k3
