// The memory plan of a run without --trunk or a budget, where every weight
// is held resident: the weights themselves plus what the budgeted plan counts
// for the request (each sequence's KDA state and MLA cache, rollback copies,
// activations). Without it a --batch of a million lines allocated state for
// each until the machine ran out ("std::bad_alloc" past 11 GB).
#pragma once

#include <cstdint>
#include <string>

#include "model/config.h"
#include "planning/memory_plan.h"
#include "platform/memory_limits.h"

namespace k3 {

class Checkpoint;

struct ResidentPlan {
  uint64_t weight_bytes = 0;        // every tensor the engine reads
  uint64_t state_bytes = 0;         // KDA state (with rollback copies) + MLA cache of all sequences
  uint64_t per_sequence_bytes = 0;  // one sequence's share of state_bytes
  uint64_t activation_bytes = 0;
  uint64_t kept_state_bytes = 0;  // kept conversation states (k3-serve --keep-mb)
  uint64_t peak_rss = 0;          // the sum of the above
};

// "pack the trunk once (k3-pack MODEL_DIR TRUNK_DIR) and run with --trunk
// TRUNK_DIR --preset auto to stream within the memory", as the front end
// spells the packer and the settings: the way out of a resident run that
// does not fit.
std::string stream_instead_advice();

// `req` gives context, prefill batch, sequences and state snapshots (its
// budgets are ignored). `checkpoint` must already be validated against
// `config`.
ResidentPlan plan_resident(const ModelConfig& config, const Checkpoint& checkpoint, const RunRequest& req);

// Throws k3::Error(kResource) when `plan` is over plan_limit of what `lim`
// says is available: for more than one sequence naming how many would fit
// ("split the batch"), otherwise what the weights and the state need.
void check_resident_plan(const ResidentPlan& plan, const RunRequest& req, const MemoryLimits& lim);

// A run without --trunk or a budget: validates `checkpoint` against
// `config`, plans `context` positions for the request's sequences and
// rollback copies with prefill batches of `batch`, and refuses it with
// check_resident_plan against the memory available now.
void check_resident_run(const ModelConfig& config, const Checkpoint& checkpoint, const RunRequest& stream,
                        uint64_t context, uint64_t batch);

}  // namespace k3
