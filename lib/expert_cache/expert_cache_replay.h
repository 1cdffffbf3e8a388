// Replays a routing trace through the expert cache's own slot table and
// eviction policy (ExpertSlots, the code ExpertCache runs), without reading
// a byte: how often each policy would have found an expert resident at a
// given cache size. Belady's optimum (evict the expert needed furthest in
// the future, or skip caching one needed later than all) is computed beside
// it: no online policy can beat it, so it says how much is left to win.
#pragma once

#include <cstdint>

#include "expert_cache/expert_cache_policy.h"
#include "expert_cache/expert_trace.h"

namespace k3 {

struct ReplayResult {
  uint64_t requests = 0;  // experts asked for
  uint64_t hits = 0;      // of those, resident when their layer's call began
  uint64_t passes = 0;
  double hit_rate() const { return requests ? static_cast<double>(hits) / static_cast<double>(requests) : 0; }
  // Bytes read per pass (per token in decode order) for experts of `expert_bytes`.
  double bytes_per_pass(uint64_t expert_bytes) const {
    return passes
               ? static_cast<double>(requests - hits) * static_cast<double>(expert_bytes) / static_cast<double>(passes)
               : 0;
  }
};

// The calls in order, each as ExpertCache runs it: prefetch (slots taken
// for the misses, never evicting one of the call's experts), then the
// deliveries (resident experts first, then the reads in the order issued;
// with no I/O, every read arrives at once). `slots` >= 1.
ReplayResult replay_expert_cache(const ExpertCallSequence& seq, const ExpertCacheShape& shape, uint64_t slots,
                                 ExpertCachePolicyKind policy);

// Belady's optimum over the same calls and slots (offline: it sees the future).
ReplayResult replay_belady(const ExpertCallSequence& seq, const ExpertCacheShape& shape, uint64_t slots);

}  // namespace k3
