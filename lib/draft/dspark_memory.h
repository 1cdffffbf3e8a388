// What a DSpark draft adds to the memory plan (runtime/memory_plan.h
// PlanRequest's draft_* fields), from its config alone: the same figures for
// k3-forward, k3-chat and k3-serve --draft and for k3-doctor --draft.
#pragma once

#include <cstdint>

#include "draft/dspark_config.h"

namespace k3 {

struct DraftMemory {
  uint64_t resident = 0;       // weights held, a prefill batch of taps, a draft pass's activations
  uint64_t streamed_held = 0;  // the same when its large matrices stream (their block buffer not counted)
  uint64_t read_per_pass = 0;  // bytes those matrices take, read again per draft pass when they stream
  uint64_t per_position = 0;   // its context per committed position
};

DraftMemory dspark_memory(const DSparkConfig& config);

}  // namespace k3
