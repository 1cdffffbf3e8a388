// How a run's layer-major prefill fits the memory available: the one search
// behind k3-forward's plan (prepare_streaming) and the forecasts of what a
// prompt reads at each preset (plan_preset_for_prompt). Three things trade
// memory for bytes read, none of them changes the output (nor does the
// batch, lowered when that lets a longer chunk fit): the chunk (tokens
// one read of the weights covers: each routed expert a chunk's rows chose is
// read once per chunk), its block states in a spill file beside the trunk
// instead of memory, and, where the trunk streams in row blocks, the chunk's
// sub-batch (rows a layer's products take at once: each row block is read
// once per sub-batch). The search takes the plan that fits and whose prompt
// reads the fewest bytes of weights (planning/prefill_forecast.h); the spill
// file's reads, sequential and often from the page cache, break ties only,
// so a longer chunk spilled wins over a shorter one in memory. A fourth: the
// expert cache's slots above its floor lent to the chunk (RunRequest::
// lend_cache), which decode then reads again as it refills them: a plan that
// lends wins only where it reads fewer bytes with the refill counted.
#pragma once

#include <cstdint>
#include <functional>

#include "model/config.h"
#include "planning/memory_plan.h"
#include "planning/run_request.h"

namespace k3 {

using PlanOf = std::function<MemoryPlan(const RunRequest&)>;
using PlanFits = std::function<bool(const MemoryPlan&)>;

// At the plan's batch, then that batch halved down to one token (a smaller
// batch's activations leave room for a longer chunk; prepare_streaming and
// the forecasts lower it here, not twice): chunks of req.chunk tokens (at
// least the batch), halved down to one batch; each in memory, then
// (can_spill) with its block states spilled; each with the longest sub-batch
// that fits, from the whole chunk halved down to a batch. Of the plans that
// fit, the one whose prompt of `tokens` reads the fewest bytes of weights (on
// a tie: the fewest bytes with the spill file's, then the larger batch, the
// longer chunk, in memory, the longer sub-batch), each tried without lending
// the cache, then lending it (its lent bytes added to the bytes read). The
// batch is lowered no further once a plan reads the least a prompt can.
// When none fits: the plan of a chunk of one token, which does not. `req`
// becomes the returned plan's request (batch, chunk, spill_chunk,
// chunk_sub_batch, lend_cache).
MemoryPlan fit_prefill_chunk(const ModelConfig& config, const PlanOf& plan_of, const PlanFits& fits, RunRequest& req,
                             uint64_t tokens, bool can_spill);

}  // namespace k3
