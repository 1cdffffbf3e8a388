#include "planning/prefill_chunk_fit.h"

#include <algorithm>
#include <optional>

#include "planning/prefill_forecast.h"

namespace k3 {

namespace {

// A plan that fits, the request that makes it, and what it is judged by.
struct Fit {
  MemoryPlan plan;
  RunRequest req;
  double bytes = 0;  // the weights' bytes read, with the lent cache's refill
  double total = 0;  // the same with the spill file's reads (a tie-break)
};

// The prompt once per read, every row block once, the cache kept: nothing
// reads fewer bytes of weights (nor, in memory, fewer in all).
bool reads_least(const Fit& f, uint64_t longest, bool in_memory) {
  return f.plan.chunk == longest && (!in_memory || !f.plan.chunk_spilled) && f.plan.cache_lent_bytes == 0 &&
         (f.plan.row_blocks == 0 || f.plan.chunk_sub_batch == f.plan.chunk);
}

// Better: fewer bytes of weights, then, at the same batch, fewer with the
// spill file's; on a tie the one found first (the larger batch, the longer
// chunk, in memory). A smaller batch is taken only to read fewer bytes of
// weights, not to spare the spill file: its sub-batches are slower to
// compute, a spill file's sequential reads are not.
void keep_better(std::optional<Fit>& best, Fit f) {
  const bool tie_counts = best && f.plan.batch == best->plan.batch;
  if (!best || f.bytes < best->bytes || (tie_counts && f.bytes == best->bytes && f.total < best->total))
    best = std::move(f);
}

// The search at one batch (req.batch): the chunk from the longest halved
// down to one batch, in memory then spilled, without lending the cache then
// lending it, each with the longest sub-batch that fits. Keeps the better
// fit in `best`; true when no smaller batch can read fewer bytes.
bool fit_at_batch(const ModelConfig& config, const PlanOf& plan_of, const PlanFits& fits, RunRequest r, uint64_t tokens,
                  bool can_spill, std::optional<Fit>& best) {
  const bool must_lend = r.lend_cache;  // asked for (K3_PREFILL_LEND): only plans that lend
  r.spill_chunk = false;
  r.chunk_sub_batch = 0;
  r.lend_cache = false;
  const MemoryPlan first = plan_of(r);  // the plan's batch and longest chunk (it lowers what the request asks)
  const uint64_t batch = std::max<uint64_t>(1, first.batch), longest = std::max(batch, first.chunk);
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
            keep_better(best,
                        Fit{p, r, reads.trunk_bytes + reads.expert_bytes + static_cast<double>(p.cache_lent_bytes),
                            reads.total()});
            break;
          }
          if (p.chunk_sub_batch <= batch) break;
        }
      }
      if (best && chunk == longest && !spill && reads_least(*best, longest, true)) return true;
    }
    if (chunk == batch) return best && reads_least(*best, longest, false);
  }
}

}  // namespace

MemoryPlan fit_prefill_chunk(const ModelConfig& config, const PlanOf& plan_of, const PlanFits& fits, RunRequest& req,
                             uint64_t tokens, bool can_spill) {
  // The batch halved down to one token: a smaller batch's activations leave
  // room for a longer chunk (the output is the same at every batch), so the
  // search goes on below a batch where a plan fits until one reads the
  // fewest bytes of weights a prompt can (a plan that reads fewer may first
  // fit two or more halvings down, so it does not stop where one halving
  // found none).
  std::optional<Fit> best;
  RunRequest r = req;
  for (;;) {
    if (fit_at_batch(config, plan_of, fits, r, tokens, can_spill, best)) break;
    const uint64_t batch = std::max<uint64_t>(1, plan_of(r).batch);
    if (batch <= 1) break;
    r.batch = batch / 2;
  }
  if (!best) {
    // Nothing fits: a chunk of one token, which does not.
    r.chunk = r.batch;
    r.spill_chunk = false;
    r.chunk_sub_batch = 0;
    best = Fit{plan_of(r), r, 0, 0};
  }
  req = best->req;
  return best->plan;
}

}  // namespace k3
