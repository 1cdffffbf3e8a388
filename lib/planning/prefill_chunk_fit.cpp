#include "planning/prefill_chunk_fit.h"

#include <algorithm>
#include <optional>

#include "planning/prefill_forecast.h"

namespace k3 {

MemoryPlan fit_prefill_chunk(const ModelConfig& config, const PlanOf& plan_of, const PlanFits& fits, RunRequest& req,
                             uint64_t tokens, bool can_spill) {
  const bool must_lend = req.lend_cache;  // asked for (K3_PREFILL_LEND): only plans that lend
  RunRequest r = req;
  r.spill_chunk = false;
  r.chunk_sub_batch = 0;
  r.lend_cache = false;
  const MemoryPlan first = plan_of(r);  // the plan's batch and longest chunk (it lowers what the request asks)
  const uint64_t batch = std::max<uint64_t>(1, first.batch), longest = std::max(batch, first.chunk);
  std::optional<MemoryPlan> best;
  RunRequest best_req;
  double best_bytes = 0, best_total = 0;
  for (uint64_t chunk = longest;; chunk = std::max(batch, chunk / 2)) {
    for (const bool spill : {false, true}) {
      if (spill && (!can_spill || chunk <= batch)) continue;
      r.chunk = chunk;
      r.spill_chunk = spill;
      // Without lending the cache first: a plan that lends it wins only by
      // reading fewer bytes, its refill (the lent bytes, read again by
      // decode as it misses) counted.
      for (const bool lend : {false, true}) {
        r.lend_cache = lend;
        if ((lend && chunk <= batch) || (!lend && must_lend)) continue;
        // The longest sub-batch that fits this chunk (without row blocks the
        // plan keeps one batch, and there is nothing to halve).
        for (r.chunk_sub_batch = chunk;; r.chunk_sub_batch = std::max(batch, r.chunk_sub_batch / 2)) {
          const MemoryPlan p = plan_of(r);
          if (lend && p.cache_lent_bytes == 0) break;  // nothing to lend: the plan without it
          if (fits(p)) {
            // The weights' bytes decide; the spill file's reads (sequential,
            // often from the page cache) only break a tie.
            const PrefillReads reads = forecast_prefill_reads(config, p, tokens);
            const double bytes = reads.trunk_bytes + reads.expert_bytes + static_cast<double>(p.cache_lent_bytes);
            if (!best || bytes < best_bytes || (bytes == best_bytes && reads.total() < best_total)) {
              best = p;
              best_req = r;
              best_bytes = bytes;
              best_total = reads.total();
            }
            break;
          }
          if (p.chunk_sub_batch <= batch) break;
        }
      }
      // The whole prompt per read, in memory, every row block once: nothing reads less.
      if (best && chunk == longest && !spill && (best->row_blocks == 0 || best->chunk_sub_batch == best->chunk)) {
        req = best_req;
        return *best;
      }
    }
    if (chunk == batch) break;
  }
  if (!best) {
    r.chunk = batch;
    r.spill_chunk = false;
    r.chunk_sub_batch = 0;
    r.lend_cache = must_lend;
    best_req = r;
    best = plan_of(r);
  }
  req = best_req;
  return *best;
}

}  // namespace k3
