// What a preset costs on this machine: the memory it holds, and the bytes
// and seconds each generated token must spend reading from storage.
//
// Memory is k3-forward's own memory plan (planning/preset_plan: plan_memory
// with the budgets, context and batch `k3-forward MODEL --list-presets`
// uses), so the forecast is the figure that list prints and the one
// k3-forward refuses to start on. Its parts, as this report groups them:
// pinned trunk sections, the expert cache, the stream buffers streamed
// sections pass through (with the streamed head's small tensors), and the
// rest (KDA state, MLA latent cache, activations, I/O buffers and index).
//
// Time per token (decode, one token at a time) is taken as I/O bound:
//   bytes = the plan's streamed trunk bytes + routed expert bytes x (1 - h)
//   seconds = bytes / measured bandwidth
// where a streamed head counts its lm_head (read in row blocks; its small
// tensors are kept) and h is the expert cache hit rate. Unless given, h is
// the plan's cache slots as a share of all routed experts (what uniform
// routing would give); real routing is skewed and repeats across
// neighbouring tokens, so this is pessimistic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "doctor/model_bytes.h"
#include "planning/memory_plan.h"
#include "planning/preset_plan.h"
#include "planning/presets.h"

namespace k3::doctor {

// A preset is recommended when its plan fits this share of usable memory:
// plan_fits, the rule k3-forward refuses to start by.
inline constexpr double kUsableShare = 0.90;

struct PresetForecast {
  Preset preset;
  MemoryPlan plan;
  uint64_t pinned_trunk = 0;    // plan.pinned_bytes
  uint64_t cache = 0;           // plan.cache_bytes
  uint64_t stream_buffers = 0;  // plan.stream_buffer_bytes + stream_staging_bytes + head_small_bytes
  uint64_t runtime = 0;         // KDA state + MLA cache + activations + I/O, index, misc
  uint64_t draft = 0;           // plan.draft_bytes: the draft model (--draft), 0 without one
  // The plan's peak_rss (the parts above add up to it).
  uint64_t memory() const { return pinned_trunk + cache + stream_buffers + runtime + draft; }

  double hit_rate = 0;
  bool hit_rate_assumed = true;  // true: the cache-share estimate; false: given by the user
  uint64_t trunk_read = 0;       // per token: streamed sections (a streamed head: its lm_head)
  uint64_t expert_read = 0;      // per token, after cache hits
  uint64_t bytes_per_token() const { return trunk_read + expert_read; }
};

// `run`: the context and sequences planned for (default: --list-presets').
PresetForecast forecast_preset(const Preset& p, const PlanModel& pm, const ModelBytes& m,
                               std::optional<double> hit_rate, const RunRequest& run = {});

// The preset `k3-forward --preset auto` would choose with usable_bytes
// available (choose_preset: the largest whose plan fits under the 90% rule);
// nullopt when none does.
// `run`: what the run adds to the standard one (k3-doctor --draft: the draft model).
std::optional<PresetForecast> recommend_preset(uint64_t usable_bytes, const PlanModel& pm, const ModelBytes& m,
                                               std::optional<double> hit_rate, const RunRequest& run = {});

}  // namespace k3::doctor
