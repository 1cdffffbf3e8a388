#include "runtime/resident_plan.h"

#include <algorithm>

#include "checkpoint/checkpoint.h"
#include "common/byte_format.h"
#include "common/checked_math.h"
#include "common/error.h"
#include "common/setting_spelling.h"
#include "model/tensor_manifest.h"
#include "runtime/streaming_setup.h"
#include "trunk/pack_command.h"

namespace k3 {

std::string stream_instead_advice() {
  return "pack the trunk once (" + spelled(kPackTrunk) + " MODEL_DIR TRUNK_DIR) and run with " +
         spelled(run_setting::kTrunkDir) + " TRUNK_DIR " + spelled(run_setting::kPreset) +
         " auto to stream within the memory";
}

ResidentPlan plan_resident(const ModelConfig& config, const Checkpoint& checkpoint, const RunRequest& req) {
  ResidentPlan r;
  for (const ExpectedTensor& t : expected_tensors(config))
    r.weight_bytes = checked_add(r.weight_bytes, checkpoint.at(t.name).info->nbytes, "the resident weights");
  // The state and activation terms exactly as the budgeted plan computes
  // them (with checked arithmetic for absurd contexts and batches).
  RunRequest state_only = req;
  state_only.trunk_budget = 0;
  state_only.cache_budget = 0;
  const MemoryPlan p = plan_memory_for_config(config, state_only);
  r.state_bytes = checked_add(p.kda_state_bytes, p.mla_cache_bytes, "the sequences' state");
  r.per_sequence_bytes = p.per_sequence_bytes;
  r.activation_bytes = p.activation_bytes;
  r.kept_state_bytes = p.kept_state_bytes;
  r.peak_rss = checked_add(checked_add(r.weight_bytes, r.state_bytes, "the resident plan"), r.activation_bytes,
                           "the resident plan");
  r.peak_rss = checked_add(r.peak_rss, r.kept_state_bytes, "the resident plan");
  return r;
}

void check_resident_plan(const ResidentPlan& plan, const RunRequest& req, const MemoryLimits& lim) {
  const uint64_t avail = lim.available();
  if (avail == UINT64_MAX || plan.peak_rss <= plan_limit(avail)) return;
  const uint64_t limit = plan_limit(avail);
  std::string over = "over the " + format_bytes(limit) + " limit (90% of " + format_bytes(avail) +
                     " available: " + available_source(lim) + ")";
  if (plan.kept_state_bytes > 0)
    over += " with " + format_bytes(plan.kept_state_bytes) + " for kept conversation states (lower " +
            spelled(run_setting::kKeptStateBytes) + ")";
  if (req.sequences > 1) {
    const uint64_t one = plan.per_sequence_bytes;
    const uint64_t fixed = plan.peak_rss - one * req.sequences;
    const uint64_t fit = one && limit > fixed ? (limit - fixed) / one : 0;
    throw Error(ExitCode::kResource,
                "a batch of " + std::to_string(req.sequences) + " sequences needs " + format_bytes(plan.peak_rss) +
                    " with the whole model resident (" + format_bytes(plan.weight_bytes) + " of weights, " +
                    format_bytes(one) + " of KDA state and MLA cache per sequence), " + over + "; " +
                    (fit ? std::to_string(std::min(fit, req.sequences - 1)) + " sequences would fit: split the batch"
                         : "not even one sequence fits: lower the context, or pack the trunk (" + spelled(kPackTrunk) +
                               ") and run with " + spelled(run_setting::kTrunkDir) + " and a " +
                               spelled(run_setting::kPreset)));
  }
  throw Error(ExitCode::kResource,
              "the whole model resident needs " + format_bytes(plan.peak_rss) + " (" + format_bytes(plan.weight_bytes) +
                  " of weights, " + format_bytes(plan.state_bytes) + " of state for " + std::to_string(req.context) +
                  " positions), " + over + "; " + stream_instead_advice() + ", or lower the context");
}

void check_resident_run(const ModelConfig& config, const Checkpoint& checkpoint, const RunRequest& stream,
                        uint64_t context, uint64_t batch) {
  validate_checkpoint(config, checkpoint);
  RunRequest req = stream;
  req.context = context;
  req.batch = batch;
  req.sequences = std::max<uint64_t>(1, stream.sequences);
  check_resident_plan(plan_resident(config, checkpoint, req), req, read_memory_limits());
}

}  // namespace k3
