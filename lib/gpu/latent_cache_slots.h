// Which of MLA's latent caches GpuBackend keeps on the device between
// attention calls, and where (gpu_attention.cpp): the device holds one
// buffer of `slots` slots of `positions` positions each; a slot holds the
// copy of one cache (named by its MlaCache::generation) and how many of its
// rows are there. A call's caches each get a slot: the one already holding
// their generation (only the rows appended since are copied), else a free
// one or the least recently used one no cache of this call holds (all of
// its rows are copied). The host names a cache anew after any change but
// an append (model/sequence_state.h), so a kept row is never stale; a
// cache found shorter than its copy is copied whole all the same.
// Bookkeeping only: no Vulkan here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace k3 {

class LatentCacheSlots {
 public:
  // Keep up to `slots` caches of up to `positions` positions (0: keep
  // none: every call's caches are copied whole, into slots sized to it).
  void configure(size_t slots, size_t positions);
  size_t slots() const { return slots_.size(); }
  size_t positions() const { return positions_; }
  bool keeps() const { return !slots_.empty(); }

  // A cache's place for one call: its slot, and the first row the device
  // lacks (rows [from, positions) are to be copied).
  struct Placement {
    size_t slot = 0, from = 0;
  };
  // The slots of one call's caches (generations[i] names caches[i], which
  // holds positions[i] rows), recorded as holding those rows once the
  // caller has copied them (commit). False, recording nothing, when they
  // do not fit: more caches than slots, or one longer than a slot.
  bool place(std::span<const uint64_t> generations, std::span<const size_t> positions, std::vector<Placement>& out);
  // Records the last place()'s rows as on the device.
  void commit();
  // Forgets every copy (the device buffer was replaced, or a copy failed).
  void forget();

 private:
  struct Slot {
    uint64_t generation = 0;  // 0: empty
    size_t rows = 0;
    uint64_t used = 0;  // the call that last used it
  };
  std::vector<Slot> slots_;
  size_t positions_ = 0;
  uint64_t calls_ = 0;
  // place()'s rows, recorded by commit(): (slot, generation, rows).
  struct Pending {
    size_t slot;
    uint64_t generation;
    size_t rows;
  };
  std::vector<Pending> pending_;
};

}  // namespace k3
