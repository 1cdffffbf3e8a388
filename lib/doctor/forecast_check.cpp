#include <cstdio>
#include <string>

#include "common/byte_format.h"
#include "doctor/checks.h"
#include "doctor/ladder_chart.h"

namespace k3::doctor {

namespace {

// One preset's row of the forecast table in --json.
JsonValue preset_row(const std::string& name, const PresetForecast& f, bool fits) {
  const MemoryPlan& pl = f.plan;
  JsonValue o = JsonValue::object();
  o.set("preset", name)
      .set("pinned_trunk_bytes", f.pinned_trunk)
      .set("cache_bytes", f.cache)
      .set("in_flight_bytes", f.stream_buffers)
      .set("runtime_bytes", f.runtime)
      .set("draft_bytes", f.draft)
      .set("memory_bytes", f.memory())
      .set("fits", fits)
      .set("peak_rss_bytes", pl.peak_rss)
      .set("context", kPresetListContext)
      .set("stream_buffers", static_cast<uint64_t>(pl.stream_buffers))
      .set("stream_buffer_bytes", pl.stream_buffer_bytes)
      .set("head_streamed", pl.head_streamed)
      .set("head_small_bytes", pl.head_small_bytes)
      .set("cache_slots", pl.cache_slots)
      .set("kda_state_bytes", pl.kda_state_bytes)
      .set("mla_cache_bytes", pl.mla_cache_bytes)
      .set("activation_bytes", pl.activation_bytes)
      .set("io_bytes", pl.io_bytes)
      .set("pinned_sections", static_cast<uint64_t>(pl.pinned.size()))
      .set("streamed_sections", static_cast<uint64_t>(pl.streamed.size()))
      .set("streamed_trunk_bytes", f.trunk_read);
  return o;
}

// Each preset's memory forecast against the budget, and the largest that fits.
void add_preset_check(Report& r, const MemoryFacts& m, const CheckpointFacts& c,
                      const std::optional<PresetForecast>& rec, const Bandwidth& bw, std::optional<double> hit_rate,
                      const RunRequest& run) {
  const ModelBytes& mb = c.bytes;
  const PlanModel& pm = c.plan_model;
  Check& k = r.add("forecast", "preset");
  JsonValue table = JsonValue::array();
  const uint64_t limit = m.usable ? plan_limit(*m.usable) : 0;
  const double budget = double(limit);
  r.arithmetic.push_back("model sizes from " + c.bytes_source + ": trunk " + format_bytes(mb.trunk()) + " (of which " +
                         format_bytes(mb.trunk_per_token()) + " is read per token), routed experts " +
                         format_bytes(mb.all_experts()) + ", one expert " + format_bytes(mb.one_expert));
  r.arithmetic.push_back("memory budget = " + format_figure("%.0f%%", kUsableShare * 100) + " of usable " +
                         (m.usable ? format_bytes(*m.usable) : std::string("unknown")) + " = " +
                         format_bytes_of(budget));
  r.arithmetic.push_back("memory forecast = k3-forward's memory plan (as --list-presets: context " +
                         std::to_string(kPresetListContext) + ", the preset's largest batch, packed trunk):");
  std::vector<LadderRow> ladder;
  for (const Preset& p : presets()) {
    PresetForecast f = forecast_preset(p, pm, mb, hit_rate, run);
    ladder.push_back({p.name, f.memory(), bw.bytes_per_s > 0 ? double(f.bytes_per_token()) / bw.bytes_per_s : 0});
    const bool fits = m.usable && plan_fits(f.plan, *m.usable);
    char line[320];
    std::snprintf(line, sizeof(line), "  %-12s %s pinned trunk + %s cache + %s in flight + %s runtime%s = %s  %s",
                  p.name.c_str(), format_bytes(f.pinned_trunk).c_str(), format_bytes(f.cache).c_str(),
                  format_bytes(f.stream_buffers).c_str(), format_bytes(f.runtime).c_str(),
                  f.draft ? (" + " + format_bytes(f.draft) + " draft model").c_str() : "",
                  format_bytes(f.memory()).c_str(), fits ? "fits" : "does not fit");
    r.arithmetic.push_back(line);
    table.push(preset_row(p.name, f, fits));
  }
  r.arithmetic.push_back("memory ladder (reads at " + format_bytes_of(bw.bytes_per_s) + "/s):");
  for (std::string& line : ladder_chart(ladder, limit)) r.arithmetic.push_back("  " + line);
  if (rec) {
    k.status = Status::kOk;
    k.summary = "--preset " + rec->preset.name + " (" + format_bytes(rec->memory()) + " forecast, within " +
                format_figure("%.0f%%", kUsableShare * 100) + " of " + format_bytes(m.usable.value_or(0)) + " usable)";
    k.advice =
        "the largest preset that fits (what --preset auto chooses here); a larger one only buys speed, "
        "never different output";
  } else {
    k.status = Status::kFail;
    const PresetForecast smallest = forecast_preset(presets().front(), pm, mb, hit_rate, run);
    k.summary = "no preset fits: the smallest (" + smallest.preset.name + ") needs " + format_bytes(smallest.memory()) +
                ", the budget is " + format_bytes_of(budget);
    k.advice = "free memory (close programs, raise the container's memory limit) until " +
               format_bytes_of(double(smallest.memory()) / kUsableShare) + " is usable";
  }
  k.details.set("recommended", rec ? JsonValue(rec->preset.name) : JsonValue())
      .set("budget_bytes", budget)
      .set("presets", std::move(table));
}

// The recommended (or smallest) preset's reads per generated token, over the bandwidth.
void add_seconds_per_token_check(Report& r, const CheckpointFacts& c, const std::optional<PresetForecast>& rec,
                                 const Bandwidth& bw, std::optional<double> hit_rate, const RunRequest& run) {
  const ModelBytes& mb = c.bytes;
  const PlanModel& pm = c.plan_model;
  Check& k = r.add("forecast", "seconds_per_token");
  const PresetForecast f = rec ? *rec : forecast_preset(presets().front(), pm, mb, hit_rate, run);
  const double bytes = double(f.bytes_per_token());
  const double spt = bw.bytes_per_s > 0 ? bytes / bw.bytes_per_s : 0;
  const std::string pname = f.preset.name;
  r.arithmetic.push_back("per generated token with --preset " + pname + " (decode, reads only; compute not included):");
  r.arithmetic.push_back("  trunk read      = " + std::to_string(f.plan.streamed.size()) + " streamed sections" +
                         (f.plan.head_streamed
                              ? " (the head as its lm_head in " + std::to_string(f.plan.head_blocks) + " blocks)"
                              : std::string()) +
                         " of the plan (" + format_bytes(f.pinned_trunk) + " pinned) = " + format_bytes(f.trunk_read));
  r.arithmetic.push_back("  experts touched = " + std::to_string(mb.moe_layers) + " MoE layers x " +
                         std::to_string(mb.experts_per_token) + " experts x " + format_bytes(mb.one_expert) + " = " +
                         format_bytes(mb.experts_per_token_bytes()));
  if (f.hit_rate_assumed)
    r.arithmetic.push_back("  cache hit rate  h = " + std::to_string(f.plan.cache_slots) + " cache slots / " +
                           std::to_string(uint64_t(mb.num_experts) * uint64_t(mb.moe_layers)) +
                           " experts = " + format_figure("%.2f%%", f.hit_rate * 100) +
                           " (uniform routing: pessimistic; set --hit-rate to use a measured one)");
  else
    r.arithmetic.push_back("  cache hit rate  h = " + format_figure("%.2f%%", f.hit_rate * 100) +
                           " (given with --hit-rate)");
  r.arithmetic.push_back("  experts read    = " + format_bytes(mb.experts_per_token_bytes()) +
                         " x (1 - h) = " + format_bytes(f.expert_read));
  r.arithmetic.push_back("  bytes per token = " + format_bytes(f.trunk_read) + " + " + format_bytes(f.expert_read) +
                         " = " + format_bytes_of(bytes));
  r.arithmetic.push_back("  bandwidth       = " + format_bytes_of(bw.bytes_per_s) + "/s " + bw.how);
  r.arithmetic.push_back("  seconds/token   = " + format_bytes_of(bytes) + " / " + format_bytes_of(bw.bytes_per_s) +
                         "/s = " + format_figure("%.2f s", spt));
  k.status = Status::kOk;
  k.summary = format_figure("%.2f s per token", spt) + " with --preset " + pname + " (" + format_bytes_of(bytes) +
              " read per token at " + format_bytes_of(bw.bytes_per_s) + "/s, " +
              (bw.measured ? "measured" : "ASSUMED") + ")";
  k.advice = bw.measured ? "a lower bound set by the disk; compute adds to it on slow CPUs" : bw.advice_if_assumed;
  k.details.set("preset", pname)
      .set("trunk_read_bytes", f.trunk_read)
      .set("experts_touched_bytes", mb.experts_per_token_bytes())
      .set("hit_rate", f.hit_rate)
      .set("hit_rate_assumed", f.hit_rate_assumed)
      .set("expert_read_bytes", f.expert_read)
      .set("bytes_per_token", f.bytes_per_token())
      .set("memory_bytes", f.memory())
      .set("bandwidth_bytes_per_s", bw.bytes_per_s)
      .set("bandwidth_measured", bw.measured)
      .set("bandwidth_source", bw.how)
      .set("seconds_per_token", spt);
}

}  // namespace

void add_forecast(Report& r, const MemoryFacts& m, const CheckpointFacts& c, const std::optional<PresetForecast>& rec,
                  const Bandwidth& bw, std::optional<double> hit_rate, const RunRequest& run) {
  add_preset_check(r, m, c, rec, bw, hit_rate, run);
  add_seconds_per_token_check(r, c, rec, bw, hit_rate, run);
}

}  // namespace k3::doctor
