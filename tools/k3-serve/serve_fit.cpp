#include "serve_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "common/byte_format.h"
#include "common/error.h"
#include "planning/preset_plan.h"
#include "runtime/plan_refusal.h"
#include "runtime/streaming_setup.h"

namespace k3 {

namespace {

// Every preset is sized for one sequence of this many positions, so the
// context is not lowered below it.
constexpr uint64_t kFloorContext = kPresetListContext;
// Kept states below this are too few to keep a conversation: the next step is none.
constexpr uint64_t kSmallestKeep = 64'000'000;

struct Planner {
  const PlanModel& model;
  RunRequest base;  // what a draft and rollback copies add
  uint64_t available;

  MemoryPlan plan(const Preset& p, const ServeShape& s) const {
    RunRequest r = base;
    r.sequences = s.slots;
    r.kept_state_bytes = s.keep_bytes;
    r.context = s.context;
    return plan_preset(p, model, r);
  }
  bool fits(const Preset& p, const ServeShape& s) const { return plan_fits(plan(p, s), available); }
};

// One step smaller in the rules' order (slots, kept states, context) among
// the parts that may change (`all`: the given ones too); false when none can.
bool lower(ServeShape& s, bool all) {
  if ((all || !s.slots_given) && s.slots > 1) {
    s.slots /= 2;
    return true;
  }
  if ((all || !s.keep_given) && s.keep_bytes > 0) {
    s.keep_bytes = s.keep_bytes > kSmallestKeep ? s.keep_bytes / 2 : 0;
    return true;
  }
  if ((all || !s.context_given) && s.context > kFloorContext) {
    s.context = std::max(s.context / 2, kFloorContext);
    return true;
  }
  return false;
}

bool lower_until_fits(const Planner& f, const Preset& p, ServeShape& s, bool all) {
  while (!f.fits(p, s))
    if (!lower(s, all)) return false;
  return true;
}

// Each flag alone lowered until it fits (--slots, --keep-mb, --ctx), so
// that a refusal offers every single change that is enough.
std::vector<ServeShape> single_changes(const Planner& f, const Preset& p, const ServeShape& s) {
  std::vector<ServeShape> out;
  for (int which = 0; which < 3; ++which) {
    ServeShape one = s;
    one.slots_given = which != 0;
    one.keep_given = which != 1;
    one.context_given = which != 2;
    if (lower_until_fits(f, p, one, false)) out.push_back(one);
  }
  return out;
}

// The preset the request's flags describe (--preset, then --trunk-gb,
// --cache-gb and --block-mb over it), as choose_preset plans one.
Preset flags_preset(const RunRequest& req) {
  RunRequest r = req;
  uint64_t trunk = 0, cache = 0;
  resolve_budgets(r, &trunk, &cache);
  Preset p;
  p.name = req.preset.empty() ? "laptop" : req.preset;
  p.trunk_gb = static_cast<double>(trunk) / 1e9;
  p.cache_gb = static_cast<double>(cache) / 1e9;
  p.block_mb = static_cast<double>(resolve_block_bytes(r)) / 1e6;
  p.max_batch = resolve_max_batch(r);
  return p;
}

std::string keep_mb(uint64_t bytes) { return std::to_string(bytes / 1'000'000); }

// "--slots 1 --keep-mb 0 --ctx 4096": the flags whose values differ.
std::string changed_flags(const ServeShape& from, const ServeShape& to) {
  std::string s;
  if (to.slots != from.slots) s += " --slots " + std::to_string(to.slots);
  if (to.keep_bytes != from.keep_bytes) s += " --keep-mb " + keep_mb(to.keep_bytes);
  if (to.context != from.context) s += " --ctx " + std::to_string(to.context);
  return s.empty() ? s : s.substr(1);
}

std::string describe(const ServeShape& s) {
  return std::to_string(s.slots) + (s.slots == 1 ? " slot" : " slots") + " of " + std::to_string(s.context) +
         " positions and " + keep_mb(s.keep_bytes) + " MB of kept states";
}

std::string gb_flag(double gb) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", gb);
  return buf;
}

// The largest share of the preset's budgets (3 digits, rounded down) that
// fits with `s`; false when even none does.
bool fitting_budgets(const Planner& f, const Preset& p, const ServeShape& s, Preset* fit) {
  auto at = [&](double share) {
    Preset q = p;
    q.trunk_gb = std::floor(p.trunk_gb * share * 1000) / 1000;
    q.cache_gb = std::floor(p.cache_gb * share * 1000) / 1000;
    return q;
  };
  if (!f.fits(at(0), s)) return false;
  double lo = 0, hi = 1;
  for (int i = 0; i < 24; ++i) {
    const double mid = (lo + hi) / 2;
    (f.fits(at(mid), s) ? lo : hi) = mid;
  }
  *fit = at(lo);
  return true;
}

[[noreturn]] void refuse(const Planner& f, const Preset& p, const ServeShape& asked, const MemoryLimits& lim) {
  std::string o = "--preset " + p.name + " with " + describe(asked) + " needs " +
                  format_bytes(f.plan(p, asked).peak_rss) + ", " + over_the_limit(lim);
  ServeShape low = asked;
  std::vector<ServeShape> fits = single_changes(f, p, asked);
  if (fits.empty() && lower_until_fits(f, p, low, true)) fits.push_back(low);
  if (!fits.empty()) {
    for (size_t i = 0; i < fits.size(); ++i)
      o += (i == 0 ? "; it fits with " : ", or with ") + changed_flags(asked, fits[i]) + " (forecast " +
           format_bytes(f.plan(p, fits[i]).peak_rss) + ")";
  } else {
    Preset fit;
    if (fitting_budgets(f, p, low, &fit))
      o += "; it fits with " + changed_flags(asked, low) + " --trunk-gb " + gb_flag(fit.trunk_gb) + " --cache-gb " +
           gb_flag(fit.cache_gb) + " (forecast " + format_bytes(f.plan(fit, low).peak_rss) + ")";
    else o += "; even --trunk-gb 0 --cache-gb 0 with " + changed_flags(asked, low) + " does not fit";
  }
  bool smaller = false;
  // The largest smaller preset that fits, as it is or lowered.
  const auto& all = presets();
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (it->trunk_gb + it->cache_gb >= p.trunk_gb + p.cache_gb) continue;
    ServeShape s = asked;
    if (!lower_until_fits(f, *it, s, true)) continue;
    const std::string flags = changed_flags(asked, s);
    o += "; --preset " + it->name + (flags.empty() ? "" : " " + flags) + " fits (forecast " +
         format_bytes(f.plan(*it, s).peak_rss) + ")";
    smaller = true;
    break;
  }
  if (!smaller && o.find("does not fit") != std::string::npos) o += ": free memory";
  throw Error(ExitCode::kResource, o);
}

}  // namespace

std::string fit_serve_shape(const ModelConfig& config, const Checkpoint& checkpoint, const ModelOptions& options,
                            const MemoryLimits& lim, ServeShape& shape) {
  const RunRequest& req = options.stream;
  const uint64_t available = lim.available();
  // Without a packed trunk the whole trunk is resident and the plan's own
  // refusal says to pack it; unknown memory: nothing to size against.
  if (!req.active() || req.trunk_dir.empty() || available == UINT64_MAX) return "";
  const PlanModel model = plan_model_for_checkpoint(config, checkpoint);
  RunRequest base = standard_run(req);
  const Planner f{model, base, available};

  Preset p;
  std::string name = "--preset " + (req.preset.empty() ? std::string("laptop") : req.preset);
  if (req.preset == kAutoPreset) {
    RunRequest run = base;
    run.sequences = shape.slots;
    run.kept_state_bytes = shape.keep_bytes;
    run.context = std::max(shape.context, kPresetListContext);
    const PresetChoice c = choose_preset(model, available, run);
    p = c.preset ? *c.preset : presets().front();
    name += " (" + p.name + ")";
  } else {
    p = flags_preset(req);
  }
  const ServeShape asked = shape;
  if (!lower_until_fits(f, p, shape, false)) refuse(f, p, asked, lim);
  const std::string lowered = changed_flags(asked, shape);
  if (lowered.empty() && !shape.context_given) {
    const uint64_t cap =
        config.max_position_embeddings > 0
            ? std::min<uint64_t>(kLargestServeContext, static_cast<uint64_t>(config.max_position_embeddings))
            : kLargestServeContext;
    ServeShape larger = shape;
    while (larger.context * 2 <= cap) {
      larger.context *= 2;
      if (!f.fits(p, larger)) break;
      shape.context = larger.context;
    }
  }
  const std::string limit = " within the " + format_bytes(plan_limit(available)) + " limit (90% of " +
                            format_bytes(available) + " available: " + available_source(lim) + ")";
  if (!lowered.empty())
    return name + ": " + describe(shape) + " to fit" + limit + " (lowered from " + changed_flags(shape, asked) +
           "; give them to choose)";
  if (!shape.context_given)
    return name + ": context " + std::to_string(shape.context) + " positions, the largest that fits" + limit +
           " with " + std::to_string(shape.slots) + (shape.slots == 1 ? " slot" : " slots") + " and " +
           keep_mb(shape.keep_bytes) + " MB of kept states (--ctx to choose)";
  return "";
}

}  // namespace k3
