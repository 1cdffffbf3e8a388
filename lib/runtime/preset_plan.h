// A preset's memory plan as `k3-forward MODEL --list-presets` computes it,
// for tools that forecast presets without running k3-forward (k3-doctor):
// a packed trunk pinned up to the preset's trunk budget, its expert cache,
// the list's context of 4096 positions, a prefill batch of 256 and the
// default I/O threads. Everything goes through plan_memory, so a forecast
// here is the figure k3-forward prints and refuses on.
#pragma once

#include <cstdint>

#include "checkpoint/trunk_layout.h"
#include "model/config.h"
#include "runtime/memory_plan.h"
#include "runtime/presets.h"

namespace k3 {

class Checkpoint;

// Context --list-presets plans for when --ctx is not given.
inline constexpr uint64_t kPresetListContext = 4096;

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

// The request --list-presets makes for `preset` with its default flags.
PlanRequest preset_plan_request(const Preset& preset, const PlanModel& model);

MemoryPlan plan_preset(const Preset& preset, const PlanModel& model);

}  // namespace k3
