// A preset's memory plan as `k3-forward MODEL --list-presets` computes it,
// for tools that forecast presets without running k3-forward (k3-doctor):
// a packed trunk pinned up to the preset's trunk budget, its expert cache,
// the list's context of 4096 positions, a prefill batch of 256 and the
// default I/O threads. Everything goes through plan_memory, so a forecast
// here is the figure k3-forward prints and refuses on.
#pragma once

#include <cstdint>
#include <string>

#include "model/config.h"
#include "planning/memory_plan.h"
#include "planning/presets.h"
#include "trunk/layout.h"

namespace k3 {

class Checkpoint;

// What the planner needs to know about a model besides its config.
struct PlanModel {
  ModelConfig config;
  TrunkLayout layout;       // the trunk as k3-pack lays it out
  uint64_t slot_bytes = 0;  // one expert cache slot (ExpertIndex::slot_bytes)
  size_t tensor_count = 0;  // checkpoint tensors (index memory)
};

// From a checkpoint on disk, as --list-presets sees it without --trunk.
PlanModel plan_model_for_checkpoint(const ModelConfig& config, const Checkpoint& checkpoint);
// From the config alone (no weights here): plan_memory_for_config's layout
// and slot size; the tensor count is the manifest's.
PlanModel plan_model_for_config(const ModelConfig& config);

// The request --list-presets makes for `preset` with its default flags: `run`
// (by default --list-presets' and k3-doctor's: 4096 positions, one
// sequence, no rollback copies) with the preset's budgets, block size and
// largest prefill batch, a packed trunk and the default I/O threads.
RunRequest preset_plan_request(const Preset& preset, const PlanModel& model, const RunRequest& run = {});

MemoryPlan plan_preset(const Preset& preset, const PlanModel& model, const RunRequest& run = {});

// `--preset auto` and k3-doctor's recommendation, one rule: the largest
// preset whose forecast fits `available` bytes (MemoryLimits::available: the
// smaller of MemAvailable and the room under the cgroup limit) under the 90%
// rule (plan_fits). When the memory available is unknown (UINT64_MAX), the
// default preset, laptop.
struct PresetChoice {
  const Preset* preset = nullptr;  // nullptr: not even the smallest fits
  MemoryPlan plan;                 // the chosen preset's (or, when none fits, the smallest's)
  const Preset* larger = nullptr;  // the next larger preset, which does not fit
  uint64_t larger_peak = 0;
  uint64_t available = UINT64_MAX;
  // "desktop: forecast 22.08 GB, within the 23.40 GB limit (90% of 26.00 GB
  // available); workstation would need 47.74 GB".
  std::string reason() const;
};
PresetChoice choose_preset(const PlanModel& model, uint64_t available, const RunRequest& run = {});

}  // namespace k3
