// ExpertCache::lend and reclaim: the cache's slots beyond the chunk's own lent to a
// layer-major prefill's chunk (model/prefill_chunk.h) and given back for
// decode. The memory plan counts the larger of the two peaks, not their sum
// (planning/memory_plan.h, MemoryPlan::cache_lent_bytes).
#include <algorithm>
#include <mutex>

#include "expert_cache/expert_cache.h"

namespace k3 {

uint64_t ExpertCache::lend(uint64_t keep) {
  settle();              // nothing in flight writes into a slot about to be lent
  guess_reads_.clear();  // all landed: nothing left to cancel or promote
  const uint64_t lent = slots_.lend(keep);
  if (lent == 0) return 0;
  const uint64_t first = keep * slot_bytes_, bytes = lent * slot_bytes_;
  arena_.discard(first, arena_.size() - first);
  std::lock_guard<std::mutex> lk(stats_mu_);
  ++stats_.lends;
  stats_.lent_bytes = std::max(stats_.lent_bytes, bytes);
  return bytes;
}

void ExpertCache::reclaim() {
  if (slots_.lent() == 0) return;
  slots_.reclaim();
  std::lock_guard<std::mutex> lk(stats_mu_);
  ++stats_.reclaims;
}

}  // namespace k3
