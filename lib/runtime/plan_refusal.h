// The one line k3-forward refuses a memory plan with: what the plan needs,
// which limit that exceeds (90% of the memory available, and where that
// figure came from), and what would fit instead, checked by planning it:
// - without --trunk (the whole trunk held in memory): pack it and pass
//   --trunk, and the preset that then fits;
// - with a packed trunk: the largest --trunk-gb/--cache-gb in the same
//   proportion that fits (rounded down to 3 digits), and the largest preset
//   that fits;
// - when even nothing pinned and the smallest cache is too much: what that
//   floor needs, the state for the context within it, and a preset that fits
//   or to lower --ctx;
// - for a --batch of sequences: how many would fit.
#pragma once

#include <cstdint>
#include <string>

#include "platform/memory_limits.h"
#include "runtime/streaming_setup.h"

namespace k3 {

class Checkpoint;

// `p` is the refused plan (its request as planned, after the prefill batch
// was lowered); `req` the run's request with the preset resolved;
// `wanted_batch` the prefill batch before lowering.
std::string plan_refusal(const ModelConfig& config, const Checkpoint& checkpoint, const RunRequest& req,
                         const PreparedStream& p, uint64_t wanted_batch, const MemoryLimits& lim);

// "over the 25.20 GB limit (90% of 28.00 GB available: MemAvailable)".
std::string over_the_limit(const MemoryLimits& lim);

}  // namespace k3
