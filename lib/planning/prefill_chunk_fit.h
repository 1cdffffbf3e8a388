// How a run's layer-major prefill fits the memory available: the one search
// behind k3-forward's plan (prepare_streaming) and the forecasts of what a
// prompt reads at each preset (plan_preset_for_prompt). Five things trade
// memory for bytes moved on the disk, none of them changes the output: the
// chunk (tokens one read of the weights covers: each routed expert a
// chunk's rows chose is read once per chunk), its block states in a spill
// file beside the trunk instead of memory (written once, read back by every
// later layer), where the trunk streams in row blocks the chunk's sub-batch
// (rows a layer's products take at once: each row block is read once per
// sub-batch, unless the chunk holds each layer whole in one buffer,
// RunRequest::hold_layer: then once per chunk, the pinned layers lent to
// that buffer and read again after the prompt), and the expert cache's
// slots beyond the chunk's own lent to the chunk (RunRequest::lend_cache),
// which decode then reads again as it refills them, and the sequences' layer
// states lent to the chunk (RunRequest::lend_state: every layer's but the
// running one's in a file beside the trunk while it runs, written and read
// back once a layer; tried only for a plan that does not fit without it).
// Each plan is judged by its disk bytes (prefill_disk_bytes): the weights
// the prompt reads, the spill file and the lent state's file written and
// read back, the lent cache's refill and the lent pinned layers' re-pin, so
// plans that spill, lend or hold compete on the same scale. The sixth, the
// batch, is lowered where that lets a longer
// chunk or sub-batch fit, but a smaller batch costs compute the bytes do not
// show (outside row blocks the trunk's products pass the weights through
// memory once per batch; decode's batch is the plan's too), so it is taken
// only where it saves more than kBatchBytesSlack of the fewest disk bytes.
#pragma once

#include <cstdint>
#include <functional>

#include "model/config.h"
#include "planning/memory_plan.h"
#include "planning/run_request.h"

namespace k3 {

using PlanOf = std::function<MemoryPlan(const RunRequest&)>;
using PlanFits = std::function<bool(const MemoryPlan&)>;

// A smaller batch is taken only where its plan moves fewer than
// 1 / (1 + kBatchBytesSlack) of the disk bytes of every larger batch's best
// plan: the byte forecast cannot tell plans a few percent apart (its expert
// term is a flat-routing upper bound; a spill file's sequential reads often
// come from the page cache), while a halved batch is certain to double the
// trunk's passes through memory outside row blocks. 1/16: a halving must
// save at least one part in sixteen of the prompt's bytes.
inline constexpr double kBatchBytesSlack = 1.0 / 16;

// The bytes a prompt of `tokens` moves on the disk under `plan`, as the
// search counts them: the weights read (planning/prefill_forecast.h), the
// spill file's and the lent state's bytes written and read back, the lent
// cache's bytes, which
// decode reads again as it refills them, and the lent pinned layers' bytes,
// read again after the prompt (MemoryPlan::pinned_lent_read_bytes).
double prefill_disk_bytes(const ModelConfig& config, const MemoryPlan& plan, uint64_t tokens);

// At the plan's batch, then that batch halved down to one token (a smaller
// batch's activations leave room for a longer chunk; prepare_streaming and
// the forecasts lower it here, not twice): chunks of req.chunk tokens (at
// least the batch), halved down to one batch; each in memory, then
// (can_spill) with its block states spilled; each without lending the
// cache, then lending it; each with the longest sub-batch that fits, from
// the whole chunk halved down to a batch, then (row blocks, a chunk longer
// than a batch) each layer held whole (RunRequest::hold_layer; only those
// where req.hold_layer asks for it, K3_PREFILL_HOLD), then held at each
// smaller hold limit in turn (RunRequest::hold_limit: each layer section size
// below the one held, largest first, until one fits lending no pinned layer;
// not where the held plan fits lending none; only the limit req.hold_limit
// asks for where it asks one, K3_PREFILL_HOLD_LIMIT; such plans compete
// only where no batch's plan that holds every layer fits); each of those that
// does not fit, with the sequence state lent too (RunRequest::lend_state,
// where can_spill: a packed trunk gives its file a place; every plan where
// req.lend_state asks for it, K3_PREFILL_LEND_STATE). At each batch the fit
// with the fewest disk bytes (on a tie the one found first: the longer
// chunk, in memory, not lending, the longer sub-batch, not held); of those,
// the largest batch's whose bytes are at most (1 + kBatchBytesSlack) times
// the fewest of any. The batch is lowered no further once a plan reads the
// least a prompt can (the longest chunk in memory, every row block once per
// chunk: its own sub-batch, or held with no pinned layer lent; the cache
// and the sequence state kept). When none fits: the plan of a chunk of one token, which does not.
// `req` becomes the returned plan's request (batch, chunk, spill_chunk,
// chunk_sub_batch, lend_cache, hold_layer, hold_limit, lend_state). One
// plan_of call per candidate, two for one that does not fit without the
// state lent.
MemoryPlan fit_prefill_chunk(const ModelConfig& config, const PlanOf& plan_of, const PlanFits& fits, RunRequest& req,
                             uint64_t tokens, bool can_spill);

}  // namespace k3
