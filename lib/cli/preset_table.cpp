#include "cli/preset_table.h"

#include <cstdio>

#include "checkpoint/checkpoint.h"
#include "cli/first_token_text.h"
#include "cli/model_options.h"
#include "common/append_printf.h"
#include "common/byte_format.h"
#include "doctor/doctor.h"
#include "doctor/model_bytes.h"
#include "doctor/preset_forecast.h"
#include "model/k3_geometry.h"
#include "planning/first_token_forecast.h"
#include "planning/preset_plan.h"
#include "platform/memory_limits.h"
#include "trunk/plan.h"

namespace k3 {

namespace {

// "; counting the draft model (--draft), 4 sequences, ..." for the header:
// what the plans hold besides the standard run.
std::string counted(const RunRequest& run) {
  std::string s;
  auto add = [&](const std::string& what) { s += (s.empty() ? "; counting " : ", ") + what; };
  if (run.draft.resident > 0) add("the draft model (--draft)");
  if (run.sequences > 1) add(std::to_string(run.sequences) + " sequences");
  if (run.state_snapshots > 0) add(std::to_string(run.state_snapshots) + " rollback copies (drafts per pass)");
  if (run.kept_state_bytes > 0) add(format_bytes(run.kept_state_bytes) + " of kept conversation states (--keep-mb)");
  return s;
}

}  // namespace

std::string preset_table(const ModelOptions& o, double read_gbps, const RunFlags& run_flags) {
  const bool reference = o.model_dir.empty();
  const ModelConfig config = reference ? k3_reference_config() : load_model_config(o.model_dir);
  PlanModel model;
  if (reference) {
    model = plan_model_for_config(config);
  } else {
    const Checkpoint checkpoint = Checkpoint::open(o.model_dir);
    model = plan_model_for_checkpoint(config, checkpoint);
    // As the presets would run with this packed trunk (the same layout as
    // k3-pack would write, unless the trunk is another one).
    if (!o.stream.trunk_dir.empty()) model.layout = open_packed_trunk(o.stream.trunk_dir, config, checkpoint);
  }
  const doctor::ModelBytes bytes = doctor::model_bytes_from_config(config);
  // The tool's flags add to every preset's plan as they add to --preset
  // auto's (a --draft is read and checked against the config here).
  RunRequest request = o.stream;
  if (run_flags) run_flags(config, request);
  RunRequest run = standard_run(request);
  run.context = o.ctx ? o.ctx : kPresetListContext;
  const double bandwidth = read_gbps > 0 ? read_gbps * 1e9 : doctor::kAssumedBandwidth;
  const MemoryLimits lim = read_memory_limits();
  const uint64_t avail = lim.available();

  std::string out;
  append_printf(
      out, "# %s; context %llu positions%s; reads at %.2f GB/s (%s); memory here: %s\n",
      reference ? "the real Kimi-K3 (reference geometry; no model directory given)" : ("model " + o.model_dir).c_str(),
      static_cast<unsigned long long>(run.context), counted(run).c_str(), bandwidth / 1e9,
      read_gbps > 0 ? "--read-gbps" : "assumed: pass k3-doctor's measured figure with --read-gbps",
      avail == UINT64_MAX ? "unknown"
                          : (format_bytes(avail) + " available, limit 90%: " + format_bytes(plan_limit(avail)) + " (" +
                             available_source(lim) + ")")
                                .c_str());
  append_printf(out, "%-12s %8s %8s %12s %12s %13s %9s %5s  %s\n", "preset", "trunk_GB", "cache_GB", "forecast_RSS",
                "pinned_trunk", "read/token", "s/token", "fits", "for");
  for (const Preset& p : presets()) {
    const doctor::PresetForecast f = doctor::forecast_preset(p, model, bytes, std::nullopt, run);
    append_printf(out, "%-12s %8.1f %8.1f %12s %12s %13s %9.2f %5s  %s machines: %s\n", p.name.c_str(), p.trunk_gb,
                  p.cache_gb, format_bytes(f.plan.peak_rss).c_str(), format_bytes(f.plan.pinned_bytes).c_str(),
                  format_bytes(f.bytes_per_token()).c_str(), static_cast<double>(f.bytes_per_token()) / bandwidth,
                  avail == UINT64_MAX ? "?" : (plan_fits(f.plan, avail) ? "yes" : "no"), p.machine.label,
                  p.description.c_str());
  }
  // Time to first token: each preset's run on the machine class it is for
  // (its chunk as long as that memory allows: planning/first_token_forecast.h).
  const uint64_t tokens = o.prompt_tokens;
  const FirstTokenRates rates = first_token_rates(read_gbps, o.threads);
  append_printf(out,
                "# time to first token (forecast), a prompt of %llu tokens, each preset on the machine it is for: "
                "reads at %.2f GB/s (%s), compute at %.1f GFLOP/s (%s), %.1f GFLOP a token\n",
                static_cast<unsigned long long>(tokens), rates.read_bytes_per_s / 1e9, rates.read_how.c_str(),
                rates.flops_per_s / 1e9, rates.flops_how.c_str(), prefill_flops_per_token(config) / 1e9);
  for (const Preset& p : presets()) {
    const MemoryPlan plan = plan_preset_for_prompt(p, model, tokens, p.machine.available_bytes());
    const FirstTokenForecast f = forecast_first_token(config, plan, tokens, rates.read_bytes_per_s, rates.flops_per_s);
    append_printf(out, "#   %-12s %s\n", p.name.c_str(), describe_first_token(f, plan).c_str());
  }
  return out;
}

}  // namespace k3
