// What a DSpark draft adds to the memory plan (planning/memory_plan.h
// RunRequest's draft), from its config alone: the same figures for
// k3-forward, k3-chat and k3-serve --draft and for k3-doctor --draft.
#pragma once

#include <cstdint>

#include "draft/dspark_config.h"
#include "planning/memory_plan.h"

namespace k3 {

DraftMemory dspark_memory(const DSparkConfig& config);

}  // namespace k3
