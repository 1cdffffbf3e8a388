#include "planning/prefill_chunk_fit.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "planning/prefill_forecast.h"

namespace k3 {

double prefill_disk_bytes(const ModelConfig& config, const MemoryPlan& plan, uint64_t tokens) {
  const PrefillReads reads = forecast_prefill_reads(config, plan, tokens);
  return reads.trunk_bytes + reads.expert_bytes + reads.spill_written_bytes + reads.spill_read_bytes +
         reads.state_written_bytes + reads.state_read_bytes + static_cast<double>(plan.cache_lent_bytes) +
         static_cast<double>(plan.pinned_lent_read_bytes);
}

namespace {

// What the search judges a plan by: its disk bytes, but for a spill file or
// a lent sequence state the plan makes whatever the request
// (K3_PREFILL_SPILL, K3_PREFILL_LEND_STATE, for tests): no choice of the
// search, so their bytes do not steer it off the chunk asked for.
double judged_bytes(const ModelConfig& config, const MemoryPlan& plan, uint64_t tokens, bool spill_forced,
                    bool state_forced) {
  const PrefillReads reads = forecast_prefill_reads(config, plan, tokens);
  double bytes = prefill_disk_bytes(config, plan, tokens);
  if (spill_forced) bytes -= reads.spill_written_bytes + reads.spill_read_bytes;
  if (state_forced) bytes -= reads.state_written_bytes + reads.state_read_bytes;
  return bytes;
}

// A plan that fits, the request that makes it, and its disk bytes.
struct Fit {
  MemoryPlan plan;
  RunRequest req;
  double bytes = 0;
};

// The prompt once per read, in memory, every row block once (the chunk its
// own sub-batch, or each layer held with no pinned layer lent), the cache
// kept: no plan at this batch or a smaller one moves fewer bytes.
bool reads_least(const Fit& f, uint64_t longest) {
  const bool blocks_once = f.plan.row_blocks == 0 || f.plan.chunk_sub_batch == f.plan.chunk ||
                           (f.plan.layer_held && f.plan.pinned_lent_bytes == 0 && f.plan.skipped_layers == 0);
  return f.plan.chunk == longest && !f.plan.chunk_spilled && f.plan.cache_lent_bytes == 0 &&
         f.plan.state_lent_bytes == 0 && blocks_once;
}

// What the search at one batch found: the batch the plan makes of the
// request's, the fit with the fewest disk bytes there (on a tie the first
// found), and whether it reads the least any batch can.
struct AtBatch {
  uint64_t batch = 1;
  std::optional<Fit> best;
  bool least = false;
  // The fewest bytes of a held plan that skips layers (a smaller hold
  // limit), kept apart from `best`; and whether a plan holding every layer
  // fits here.
  std::optional<Fit> limited;
  bool holds_all = false;
};

// The search at one batch (req.batch): the chunk from the longest halved
// down to one batch, in memory then spilled, without lending the cache then
// lending it, each with the longest sub-batch that fits, then held.
class BatchSearch {
 public:
  BatchSearch(const ModelConfig& config, const PlanOf& plan_of, const PlanFits& fits, RunRequest r, uint64_t tokens,
              bool can_spill)
      : config_(config), plan_of_(plan_of), fits_(fits), r_(r), tokens_(tokens), can_spill_(can_spill) {
    r_.spill_chunk = false;
    r_.lend_cache = false;
    r_.hold_layer = false;
    r_.chunk_sub_batch = std::numeric_limits<uint64_t>::max();  // at most the chunk: the chunk's own
    // The plan's batch and longest chunk (it lowers what the request asks),
    // and so the plan of the first candidate: it is not made twice.
    first_ = plan_of_(r_);
    at_.batch = std::max<uint64_t>(1, first_.batch);
    spill_forced_ = first_.chunk_spilled;  // not asked for here: the plan spills whatever the request
    // The sequence state: lent by every plan where asked for or forced
    // (K3_PREFILL_LEND_STATE); else tried for a plan that does not fit (where
    // one fits, lending only adds the file's bytes), where a spill file may go.
    state_forced_ = must_lend_state_ || first_.state_lent_bytes > 0;
    can_lend_state_ = can_spill_ && !state_forced_;
  }

  AtBatch run() {
    const uint64_t batch = at_.batch, longest = std::max(batch, first_.chunk);
    // A trunk streamed in row blocks may hold each layer whole for a chunk.
    const bool can_hold = first_.row_blocks > 0, only_held = must_hold_ && can_hold;
    for (uint64_t chunk = longest;; chunk = std::max(batch, chunk / 2)) {
      for (const bool spill : {false, true}) {
        if (spill && (!can_spill_ || chunk <= batch)) continue;
        r_.chunk = chunk;
        r_.spill_chunk = spill;
        for (const bool lend : {false, true}) {
          r_.lend_cache = lend;
          if ((lend && chunk <= batch) || (!lend && must_lend_)) continue;
          // The longest sub-batch that fits this chunk (without row blocks
          // the plan keeps one batch, and there is nothing to halve).
          for (r_.chunk_sub_batch = chunk; !only_held; r_.chunk_sub_batch = std::max(batch, r_.chunk_sub_batch / 2)) {
            const bool is_first = chunk == longest && !spill && !lend && r_.chunk_sub_batch == chunk;
            const MemoryPlan p = plan_lending_state(is_first ? &first_ : nullptr);
            if (lend && p.cache_lent_bytes == 0) break;  // nothing to lend: the plan without it
            if (fits_(p)) {
              consider(p);
              break;
            }
            if (p.chunk_sub_batch <= batch) break;
          }
          // Then each layer held whole, its sub-batch one piece.
          if (can_hold && chunk > batch) hold(lend);
        }
        if (at_.best && chunk == longest && !spill && reads_least(*at_.best, longest)) {
          at_.least = true;
          return at_;
        }
      }
      if (chunk == batch) return at_;
    }
  }

 private:
  void consider(const MemoryPlan& p) {
    const double bytes = judged_bytes(config_, p, tokens_, spill_forced_, state_forced_);
    std::optional<Fit>& to = p.skipped_layers > 0 ? at_.limited : at_.best;
    at_.holds_all = at_.holds_all || (p.layer_held && p.skipped_layers == 0);
    if (to && bytes >= to->bytes) return;
    to = Fit{p, r_, bytes};
    to->req.lend_state = must_lend_state_ || p.state_lent_bytes > 0;  // the plan's (plan_lending_state)
  }
  // The plan of r_ (or `made`, already made), or where it does not fit and a
  // chunk runs, the same plan with the sequence state lent where that fits.
  MemoryPlan plan_lending_state(const MemoryPlan* made) {
    const MemoryPlan p = made ? *made : plan_of_(r_);
    if (!can_lend_state_ || p.chunk <= p.batch || fits_(p)) return p;
    r_.lend_state = true;
    const MemoryPlan lent = plan_of_(r_);
    r_.lend_state = false;
    return fits_(lent) ? lent : p;
  }
  // The held plan, then (unless a limit was asked for) at smaller hold
  // limits.
  void hold(bool lend) {
    r_.hold_layer = true;
    const MemoryPlan p = plan_lending_state(nullptr);
    if (fits_(p) && (!lend || p.cache_lent_bytes > 0)) consider(p);
    if (!asked_limit_) hold_smaller(p);
    r_.hold_layer = false;
    r_.hold_limit = asked_limit_;
  }
  // The held plan at smaller hold limits: each layer section size below
  // the one held, largest first, the layers over it streaming in row blocks
  // once per piece. Not where `held` fits without lending a pinned layer (a
  // smaller limit then only reads more), and no further than the first that
  // fits lending none.
  void hold_smaller(const MemoryPlan& held) {
    if (fits_(held) && held.pinned_lent_bytes == 0) return;
    for (uint64_t limit = held.hold_next_limit; limit > 0;) {
      r_.hold_limit = limit;
      const MemoryPlan p = plan_lending_state(nullptr);
      const bool fit = fits_(p) && (!r_.lend_cache || p.cache_lent_bytes > 0);
      if (fit) consider(p);
      if (fit && p.pinned_lent_bytes == 0) return;
      if (p.hold_next_limit >= limit) return;  // each limit below the last, or the chain could not end
      limit = p.hold_next_limit;
    }
  }

  const ModelConfig& config_;
  const PlanOf& plan_of_;
  const PlanFits& fits_;
  RunRequest r_;
  const uint64_t tokens_;
  const bool can_spill_;
  const bool must_lend_ = r_.lend_cache;        // asked for (K3_PREFILL_LEND): only plans that lend
  const bool must_hold_ = r_.hold_layer;        // asked for (K3_PREFILL_HOLD): only held plans, where one can hold
  const uint64_t asked_limit_ = r_.hold_limit;  // asked for (K3_PREFILL_HOLD_LIMIT): held plans at that limit only
  const bool must_lend_state_ = r_.lend_state;  // asked for: every plan lends the sequence state
  MemoryPlan first_;
  AtBatch at_;
  bool spill_forced_ = false, state_forced_ = false, can_lend_state_ = false;
};

}  // namespace

MemoryPlan fit_prefill_chunk(const ModelConfig& config, const PlanOf& plan_of, const PlanFits& fits, RunRequest& req,
                             uint64_t tokens, bool can_spill) {
  // The batch halved down to one token: a smaller batch's activations leave
  // room for a longer chunk or sub-batch (the output is the same at every
  // batch), so the search goes on below a batch where a plan fits until one
  // reads the least a prompt can (a plan that moves fewer bytes may first fit
  // two or more halvings down, so it does not stop where one found none).
  std::vector<AtBatch> searched;  // the largest batch first
  RunRequest r = req;
  bool holds_all = false;
  for (;;) {
    searched.push_back(BatchSearch(config, plan_of, fits, r, tokens, can_spill).run());
    const AtBatch& at = searched.back();
    holds_all = holds_all || at.holds_all;
    if (at.least || at.batch <= 1) break;
    r.batch = at.batch / 2;
  }
  // A plan that skips layers is taken only where no batch holds every
  // layer: its skipped layers are read once per piece, and in a held chunk
  // the batch does not set the sub-batch (one piece), so the slack below
  // would trade those bytes for a larger batch that saves little compute.
  std::vector<Fit> per_batch;  // each batch's best
  for (AtBatch& at : searched) {
    if (!holds_all && at.limited && (!at.best || at.limited->bytes < at.best->bytes)) at.best = std::move(at.limited);
    if (at.best) per_batch.push_back(std::move(*at.best));
  }
  if (per_batch.empty()) {
    // Nothing fits: a chunk of one token, which does not.
    r.chunk = r.batch;
    r.spill_chunk = false;
    r.chunk_sub_batch = 0;
    const MemoryPlan none = plan_of(r);
    req = r;
    return none;
  }
  // The largest batch within kBatchBytesSlack of the fewest disk bytes.
  double fewest = per_batch.front().bytes;
  for (const Fit& f : per_batch) fewest = std::min(fewest, f.bytes);
  const double within = fewest * (1 + kBatchBytesSlack);
  const Fit& chosen =
      *std::find_if(per_batch.begin(), per_batch.end(), [&](const Fit& f) { return f.bytes <= within; });
  req = chosen.req;
  return chosen.plan;
}

}  // namespace k3
