#include "runtime/plan_refusal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/byte_format.h"
#include "common/setting_spelling.h"
#include "planning/preset_plan.h"
#include "trunk/pack_command.h"

namespace k3 {

namespace {

// Bytes rounded down to three significant digits (at least 1 MB steps), in
// GB as typed on a command line: 14.5, 0.0035.
uint64_t round_down(uint64_t bytes) {
  uint64_t step = 1'000'000;
  while (bytes / step >= 1000) step *= 10;
  return bytes / step * step;
}
std::string gb_flag(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", static_cast<double>(bytes) / 1e9);
  return buf;
}

// The plan of `base` with other budgets and batch.
MemoryPlan replan(const ModelConfig& config, const PreparedStream& p, uint64_t trunk, uint64_t cache, uint64_t batch) {
  RunRequest r = p.plan_request;
  r.trunk_budget = trunk;
  r.cache_budget = cache;
  r.batch = batch;
  return plan_memory(config, p.layout, p.plan.slot_bytes, r);
}

// The largest budgets in the requested proportion (rounded down)
// whose plan fits at `batch`; false when not even zero budgets fit.
bool fitting_budgets(const ModelConfig& config, const PreparedStream& p, uint64_t batch, uint64_t available,
                     uint64_t* trunk, uint64_t* cache, uint64_t* peak) {
  const uint64_t want_t = p.plan_request.trunk_budget, want_c = p.plan_request.cache_budget;
  auto fits = [&](double s, uint64_t* t, uint64_t* c, uint64_t* rss) {
    *t = round_down(static_cast<uint64_t>(static_cast<double>(want_t) * s));
    *c = round_down(static_cast<uint64_t>(static_cast<double>(want_c) * s));
    const MemoryPlan plan = replan(config, p, *t, *c, batch);
    *rss = plan.peak_rss;
    return plan_fits(plan, available);
  };
  if (!fits(0, trunk, cache, peak)) return false;
  double lo = 0, hi = 1;  // the plan grows with the budgets: bisect the share of them that fits
  for (int i = 0; i < 30; ++i) {
    const double mid = (lo + hi) / 2;
    uint64_t t, c, rss;
    (fits(mid, &t, &c, &rss) ? lo : hi) = mid;
  }
  return fits(lo, trunk, cache, peak);
}

// "--trunk-gb T --cache-gb C" as the front end spells the budgets.
std::string budgets_flags(const std::string& trunk, const std::string& cache) {
  return spelled(run_setting::kTrunkGb) + " " + trunk + " " + spelled(run_setting::kCacheGb) + " " + cache;
}

}  // namespace

std::string over_the_limit(const MemoryLimits& lim) {
  const uint64_t avail = lim.available();
  return "over the " + format_bytes(plan_limit(avail)) + " limit (90% of " + format_bytes(avail) +
         " available: " + available_source(lim) + ")";
}

std::string plan_refusal(const ModelConfig& config, const Checkpoint& checkpoint, const RunRequest& req,
                         const PreparedStream& p, uint64_t wanted_batch, const MemoryLimits& lim) {
  const uint64_t avail = lim.available();
  const uint64_t peak = p.plan.peak_rss;
  // k3-serve's kept conversation states are a term of their own: the first thing to lower.
  const std::string kept = p.plan.kept_state_bytes == 0 ? ""
                                                        : " with " + format_bytes(p.plan.kept_state_bytes) +
                                                              " for kept conversation states (lower " +
                                                              spelled(run_setting::kKeptStateBytes) + ")";
  if (req.sequences > 1) {
    const uint64_t one = p.plan.per_sequence_bytes, limit = plan_limit(avail);
    const uint64_t fixed = peak - one * req.sequences;
    const uint64_t fit = one && limit > fixed ? (limit - fixed) / one : 0;
    return "a batch of " + std::to_string(req.sequences) + " sequences needs " + format_bytes(peak) + " (" +
           format_bytes(one) + " of KDA state and MLA cache per sequence), " + over_the_limit(lim) + kept + "; " +
           (fit ? std::to_string(std::min(fit, req.sequences - 1)) + " sequences would fit: split the batch"
                : "not even one sequence fits: lower " + spelled(run_setting::kContext) + " or the budgets");
  }
  const std::string trunk_flag = spelled(run_setting::kTrunkDir), preset_flag = spelled(run_setting::kPreset);
  std::string o = "the memory plan needs " + format_bytes(peak) + ", " + over_the_limit(lim) + kept;
  // The presets as a packed trunk runs them, for this run's context.
  const PresetChoice choice = choose_auto_preset(config, checkpoint, req, avail);
  if (req.trunk_dir.empty()) {
    o += "; without " + trunk_flag + " the whole trunk (" + format_bytes(p.plan.pinned_bytes) +
         ") is held in memory: pack it once (" + spelled(kPackTrunk) + " MODEL_DIR TRUNK_DIR) and pass " + trunk_flag +
         " TRUNK_DIR";
    if (choice.preset)
      o += ", with which " + preset_flag + " " + choice.preset->name + " fits (forecast " +
           format_bytes(choice.plan.peak_rss) + ")";
    else
      o += "; even then no preset fits (the smallest needs " + format_bytes(choice.plan.peak_rss) + "): lower " +
           spelled(run_setting::kContext);
    return o;
  }
  uint64_t trunk = 0, cache = 0, fit_peak = 0;
  const bool budgets = fitting_budgets(config, p, wanted_batch, avail, &trunk, &cache, &fit_peak) ||
                       fitting_budgets(config, p, p.plan.batch, avail, &trunk, &cache, &fit_peak);
  if (budgets) {
    o += "; with " + budgets_flags(gb_flag(trunk), gb_flag(cache)) + " it fits (forecast " + format_bytes(fit_peak) +
         ")";
    if (choice.preset && choice.preset->name != req.preset)
      o += ", as does " + preset_flag + " " + choice.preset->name + " (" + format_bytes(choice.plan.peak_rss) + ")";
    return o;
  }
  // Nothing pinned and the smallest cache are still too much.
  const MemoryPlan floor = replan(config, p, 0, 0, p.plan.batch);
  o += "; even " + budgets_flags("0", "0") + " needs " + format_bytes(floor.peak_rss) +
       " (of which the KDA state and MLA latent cache for " + std::to_string(req.context) + " positions are " +
       format_bytes(floor.kda_state_bytes + floor.mla_cache_bytes) + ")";
  if (choice.preset && choice.preset->name != req.preset)
    o += "; " + preset_flag + " " + choice.preset->name + " fits (" + format_bytes(choice.plan.peak_rss) + ")";
  else o += ": free memory, or lower " + spelled(run_setting::kContext);
  return o;
}

}  // namespace k3
