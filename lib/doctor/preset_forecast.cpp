#include "doctor/preset_forecast.h"

#include <algorithm>
#include <cmath>

namespace k3::doctor {

PresetForecast forecast_preset(const Preset& p, const PlanModel& pm, const ModelBytes& m,
                               std::optional<double> hit_rate, const RunRequest& run) {
  PresetForecast f;
  f.preset = p;
  f.plan = plan_preset(p, pm, run);
  const MemoryPlan& plan = f.plan;
  f.pinned_trunk = plan.pinned_bytes;
  f.cache = plan.cache_bytes;
  f.stream_buffers = plan.stream_buffer_bytes + plan.stream_staging_bytes + plan.head_small_bytes;
  f.runtime = plan.kda_state_bytes + plan.mla_cache_bytes + plan.activation_bytes + plan.io_bytes;
  f.draft = plan.draft_bytes;

  // Streamed layer sections and a streamed head's lm_head, as trunk.bin
  // stores them (compressed sizes for a compressed trunk).
  f.trunk_read = plan.streamed_read_bytes;

  const uint64_t all_experts = static_cast<uint64_t>(m.num_experts) * static_cast<uint64_t>(m.moe_layers);
  if (hit_rate) {
    f.hit_rate = std::clamp(*hit_rate, 0.0, 1.0);
    f.hit_rate_assumed = false;
  } else {
    f.hit_rate =
        all_experts ? std::min(1.0, static_cast<double>(plan.cache_slots) / static_cast<double>(all_experts)) : 0.0;
  }
  f.expert_read = static_cast<uint64_t>(std::llround(m.experts_per_token_bytes() * (1.0 - f.hit_rate)));
  return f;
}

std::optional<PresetForecast> recommend_preset(uint64_t usable_bytes, const PlanModel& pm, const ModelBytes& m,
                                               std::optional<double> hit_rate, const RunRequest& run) {
  // The rule `k3-forward --preset auto` follows (planning/preset_plan.h).
  const PresetChoice choice = choose_preset(pm, usable_bytes, run);
  if (!choice.preset) return std::nullopt;
  return forecast_preset(*choice.preset, pm, m, hit_rate, run);
}

}  // namespace k3::doctor
