// forecast/first_token: how long a prompt of N tokens (an agent's 4,000 by
// default) takes to its first token with the recommended preset, from the
// measured disk rate and this CPU's measured prefill rate
// (planning/first_token_forecast.h has the formula).
#include <string>

#include "common/byte_format.h"
#include "doctor/checks.h"
#include "planning/first_token_forecast.h"

namespace k3::doctor {

FirstTokenForecast add_first_token_check(Report& r, const MemoryFacts& m, const PlanModel& pm, const Preset& preset,
                                         const Bandwidth& bw, const std::optional<PrefillProbe>& probe, int cores,
                                         uint64_t tokens) {
  Check& k = r.add("forecast", "first_token");
  // The chunk a run of this preset takes here (or, memory unknown, on the
  // machine class the preset is for).
  const uint64_t available = m.usable ? *m.usable : preset.machine.available_bytes();
  const MemoryPlan plan = plan_preset_for_prompt(preset, pm, tokens, available);
  const int threads = cores > 0 ? cores : 1;
  const double per_core = probe ? probe->flops_per_s_per_core : kAssumedFlopsPerCore;
  const FirstTokenForecast f = forecast_first_token(pm.config, plan, tokens, bw.bytes_per_s, per_core * threads);
  const double flops = prefill_flops_per_token(pm.config);
  const std::string rate_how = probe ? "measured: " + format_figure("%.1f", probe->flops_per_s_per_core / 1e9) +
                                           " GFLOP/s a core on 64-row BF16 products x " + std::to_string(threads) +
                                           " cores"
                                     : "ASSUMED (--no-probe): " + format_figure("%.0f", kAssumedFlopsPerCore / 1e9) +
                                           " GFLOP/s a core x " + std::to_string(threads) + " cores";
  r.arithmetic.push_back("time to first token with --preset " + preset.name + ", a prompt of " +
                         std::to_string(tokens) + " tokens (a forecast):");
  r.arithmetic.push_back("  read            = " + format_bytes_of(f.reads.total()) + " (one read of the weights per " +
                         std::to_string(plan.chunk) + " tokens" +
                         (plan.chunk_spilled ? ", the chunk's block states spilled beside the trunk" : "") + ")");
  r.arithmetic.push_back("  reading         = " + format_bytes_of(f.reads.total()) + " / " +
                         format_bytes_of(bw.bytes_per_s) + "/s = " + format_figure("%.1f s", f.read_seconds));
  r.arithmetic.push_back("  compute         = " + std::to_string(tokens) + " tokens x " +
                         format_figure("%.1f", flops / 1e9) + " GFLOP / " + format_figure("%.1f", f.flops_per_s / 1e9) +
                         " GFLOP/s (" + rate_how + ") = " + format_figure("%.1f s", f.compute_seconds));
  r.arithmetic.push_back("  first token     = " + format_figure("%.1f s", f.read_seconds) + " + " +
                         format_figure("%.1f s", f.compute_seconds) + " = " + format_figure("%.1f s", f.seconds()) +
                         " (at most: the stream reads ahead while layers compute)");
  k.status = Status::kOk;
  k.summary = format_figure("%.0f s", f.seconds()) + " to the first token of a " + std::to_string(tokens) +
              "-token prompt with --preset " + preset.name + " (forecast: " + format_figure("%.0f s", f.read_seconds) +
              " reading " + format_bytes_of(f.reads.total()) + ", " + format_figure("%.0f s", f.compute_seconds) +
              " computing)";
  k.advice = probe ? "a forecast from measured rates; --stats-json's prefill figures say what a run took"
                   : "the CPU was not measured (--no-probe): run without it for a measured compute rate";
  k.details.set("preset", preset.name)
      .set("prompt_tokens", tokens)
      .set("tokens_per_read", plan.chunk)
      .set("spilled", plan.chunk_spilled)
      .set("read_bytes", f.reads.total())
      .set("read_bytes_per_s", bw.bytes_per_s)
      .set("read_seconds", f.read_seconds)
      .set("flops_per_token", flops)
      .set("flops_per_s", f.flops_per_s)
      .set("flops_measured", probe.has_value())
      .set("compute_seconds", f.compute_seconds)
      .set("seconds", f.seconds());
  return f;
}

}  // namespace k3::doctor
