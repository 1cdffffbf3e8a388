#include <cstdio>
#include <string>

#include "doctor/checks.h"

namespace k3::doctor {

namespace {
std::string gb(double bytes) { return human_bytes(bytes); }

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}
}  // namespace

void add_forecast(Report& r, const MemoryFacts& m, const CheckpointFacts& c,
                  const std::optional<PresetForecast>& rec, const Bandwidth& bw, std::optional<double> hit_rate) {
  const ModelBytes& mb = c.bytes;
  {
    Check& k = r.add("forecast", "preset");
    JsonValue table = JsonValue::array();
    const double budget = m.usable ? kUsableShare * double(*m.usable) : 0;
    r.arithmetic.push_back("model sizes from " + c.bytes_source + ": trunk " + gb(double(mb.trunk())) +
                           " (of which " + gb(double(mb.trunk_per_token())) + " is read per token), routed experts " +
                           gb(double(mb.all_experts())) + ", one expert " + gb(double(mb.one_expert)));
    r.arithmetic.push_back("memory budget = " + fmt("%.0f%%", kUsableShare * 100) + " of usable " +
                           (m.usable ? gb(double(*m.usable)) : std::string("unknown")) + " = " + gb(budget));
    for (const Preset& p : presets()) {
      PresetForecast f = forecast_preset(p, mb, hit_rate);
      const bool fits = m.usable && double(f.memory()) <= budget;
      char line[256];
      std::snprintf(line, sizeof(line), "  %-12s %s pinned trunk + %s cache + %s in flight + %s runtime = %s  %s",
                    p.name.c_str(), gb(double(f.pinned_trunk)).c_str(), gb(double(f.cache)).c_str(),
                    gb(double(f.stream_buffers)).c_str(), gb(double(f.runtime)).c_str(), gb(double(f.memory())).c_str(),
                    fits ? "fits" : "does not fit");
      r.arithmetic.push_back(line);
      JsonValue o = JsonValue::object();
      o.set("preset", p.name).set("pinned_trunk_bytes", f.pinned_trunk).set("cache_bytes", f.cache)
          .set("in_flight_bytes", f.stream_buffers).set("runtime_bytes", f.runtime).set("memory_bytes", f.memory())
          .set("fits", fits);
      table.push(std::move(o));
    }
    if (rec) {
      k.status = Status::kOk;
      k.summary = "--preset " + rec->preset.name + " (" + gb(double(rec->memory())) + " forecast, within " +
                  fmt("%.0f%%", kUsableShare * 100) + " of " + gb(double(m.usable.value_or(0))) + " usable)";
      k.advice = "the largest preset that fits; a larger one only buys speed, never different output";
    } else {
      k.status = Status::kFail;
      const PresetForecast smallest = forecast_preset(presets().front(), mb, hit_rate);
      k.summary = "no preset fits: the smallest (" + smallest.preset.name + ") needs " + gb(double(smallest.memory())) +
                  ", the budget is " + gb(budget);
      k.advice = "free memory (close programs, raise the container's memory limit) until " +
                 gb(double(smallest.memory()) / kUsableShare) + " is usable";
    }
    k.details.set("recommended", rec ? JsonValue(rec->preset.name) : JsonValue())
        .set("budget_bytes", budget).set("presets", std::move(table));
  }
  {
    Check& k = r.add("forecast", "seconds_per_token");
    const PresetForecast f = rec ? *rec : forecast_preset(presets().front(), mb, hit_rate);
    const double bytes = double(f.bytes_per_token());
    const double spt = bw.bytes_per_s > 0 ? bytes / bw.bytes_per_s : 0;
    const std::string pname = f.preset.name;
    r.arithmetic.push_back("per generated token with --preset " + pname + " (decode, reads only; compute not included):");
    r.arithmetic.push_back("  trunk read      = " + gb(double(mb.trunk_per_token())) + " per token - " +
                           gb(double(f.pinned_trunk)) + " pinned = " + gb(double(f.trunk_read)));
    r.arithmetic.push_back("  experts touched = " + std::to_string(mb.moe_layers) + " MoE layers x " +
                           std::to_string(mb.experts_per_token) + " experts x " + gb(double(mb.one_expert)) + " = " +
                           gb(double(mb.experts_per_token_bytes())));
    if (f.hit_rate_assumed)
      r.arithmetic.push_back("  cache hit rate  h = " + gb(double(f.cache)) + " cache / " + gb(double(mb.all_experts())) +
                             " of experts = " + fmt("%.2f%%", f.hit_rate * 100) +
                             " (uniform routing: pessimistic; set --hit-rate to use a measured one)");
    else
      r.arithmetic.push_back("  cache hit rate  h = " + fmt("%.2f%%", f.hit_rate * 100) + " (given with --hit-rate)");
    r.arithmetic.push_back("  experts read    = " + gb(double(mb.experts_per_token_bytes())) + " x (1 - h) = " +
                           gb(double(f.expert_read)));
    r.arithmetic.push_back("  bytes per token = " + gb(double(f.trunk_read)) + " + " + gb(double(f.expert_read)) +
                           " = " + gb(bytes));
    r.arithmetic.push_back("  bandwidth       = " + gb(bw.bytes_per_s) + "/s " + bw.how);
    r.arithmetic.push_back("  seconds/token   = " + gb(bytes) + " / " + gb(bw.bytes_per_s) + "/s = " + fmt("%.2f s", spt));
    k.status = Status::kOk;
    k.summary = fmt("%.2f s per token", spt) + " with --preset " + pname + " (" + gb(bytes) + " read per token at " +
                gb(bw.bytes_per_s) + "/s, " + (bw.measured ? "measured" : "ASSUMED") + ")";
    k.advice = bw.measured ? "a lower bound set by the disk; compute adds to it on slow CPUs"
                           : bw.advice_if_assumed;
    k.details.set("preset", pname).set("trunk_read_bytes", f.trunk_read).set("experts_touched_bytes", mb.experts_per_token_bytes())
        .set("hit_rate", f.hit_rate).set("hit_rate_assumed", f.hit_rate_assumed).set("expert_read_bytes", f.expert_read)
        .set("bytes_per_token", f.bytes_per_token()).set("bandwidth_bytes_per_s", bw.bytes_per_s)
        .set("bandwidth_measured", bw.measured).set("bandwidth_source", bw.how).set("seconds_per_token", spt);
  }
}

}  // namespace k3::doctor
