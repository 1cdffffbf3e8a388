#include "doctor/preset_forecast.h"

#include <algorithm>
#include <cmath>

namespace k3::doctor {

PresetForecast forecast_preset(const Preset& p, const ModelBytes& m, std::optional<double> hit_rate) {
  PresetForecast f;
  f.preset = p;
  const uint64_t per_token_trunk = m.trunk_per_token();
  f.pinned_trunk = std::min<uint64_t>(static_cast<uint64_t>(std::llround(p.trunk_gb * 1e9)), per_token_trunk);
  const uint64_t all_experts = m.all_experts();
  f.cache = std::min<uint64_t>(static_cast<uint64_t>(std::llround(p.cache_gb * 1e9)), all_experts);
  const uint64_t layer_experts = m.one_expert * static_cast<uint64_t>(m.experts_per_token);
  f.stream_buffers = layer_experts + (f.pinned_trunk < per_token_trunk ? m.largest_moe_layer_trunk : 0);

  if (hit_rate) {
    f.hit_rate = std::clamp(*hit_rate, 0.0, 1.0);
    f.hit_rate_assumed = false;
  } else {
    f.hit_rate = all_experts ? static_cast<double>(f.cache) / static_cast<double>(all_experts) : 0.0;
  }
  f.trunk_read = per_token_trunk - f.pinned_trunk;
  f.expert_read = static_cast<uint64_t>(std::llround(m.experts_per_token_bytes() * (1.0 - f.hit_rate)));
  return f;
}

std::optional<PresetForecast> recommend_preset(uint64_t usable_bytes, const ModelBytes& m,
                                               std::optional<double> hit_rate) {
  std::optional<PresetForecast> best;
  const double budget = kUsableShare * static_cast<double>(usable_bytes);
  for (const Preset& p : presets()) {
    PresetForecast f = forecast_preset(p, m, hit_rate);
    if (static_cast<double>(f.memory()) > budget) continue;
    if (!best || f.memory() >= best->memory()) best = f;  // ties: the later, larger preset
  }
  return best;
}

}  // namespace k3::doctor
