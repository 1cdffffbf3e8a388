// How long a prompt of N tokens takes to its first token: a forecast for
// k3-doctor, --list-presets and --plan (docs/memory.md).
//
//   bytes   = what the prompt reads under the plan (prefill_forecast.h: the
//             streamed trunk once per chunk, or per sub-batch in row blocks;
//             the experts under flat routing, an upper bound; a spilled
//             chunk's block states read back)
//   reading = bytes / the disk's read rate
//   compute = N x flops per token / this CPU's measured rate
//   seconds = reading + compute
//
// The sum assumes reading and computing never overlap (the stream reads
// ahead while a layer computes, so a run takes at least the larger of the
// two and at most their sum). Flops per token count every matrix of a
// layer's trunk and the top-k routed experts' three matrices (2 flops a
// weight); attention over the context, norms and the head's one row are
// left out.
#pragma once

#include <cstdint>
#include <string>

#include "model/config.h"
#include "planning/memory_plan.h"
#include "planning/prefill_forecast.h"
#include "planning/preset_plan.h"

namespace k3 {

// The prompt the forecast is for unless told: an agent's system prompt and
// tool list.
inline constexpr uint64_t kFirstTokenPromptTokens = 4000;

// 2 x the weights a token multiplies by in the layers (see above).
double prefill_flops_per_token(const ModelConfig& config);

struct FirstTokenForecast {
  PrefillReads reads;
  double read_bytes_per_s = 0;
  double flops_per_s = 0;  // the CPU's, all threads a run uses
  double read_seconds = 0;
  double compute_seconds = 0;
  double seconds() const { return read_seconds + compute_seconds; }
  // Prompt tokens a second the CPU computes (flops_per_s / flops per token).
  double tokens_per_s = 0;
};

FirstTokenForecast forecast_first_token(const ModelConfig& config, const MemoryPlan& plan, uint64_t tokens,
                                        double read_bytes_per_s, double flops_per_s);

// The plan a run of `preset` makes for a prompt of `tokens` where
// `available` bytes are available: a context of the prompt, its chunk as
// long as the prompt, then, as k3-forward does, the fit that reads the
// fewest bytes of the shorter chunks, spilled block states and shorter
// sub-batches (planning/prefill_chunk_fit.h).
MemoryPlan plan_preset_for_prompt(const Preset& preset, const PlanModel& model, uint64_t tokens, uint64_t available);

// "4000 tokens: 1.62 TB read (1 read of the weights per 4000 tokens), 810.2 s
// at 2.00 GB/s + 325.2 s of compute at 12.30 tokens/s = 1135.4 s".
std::string describe_first_token(const FirstTokenForecast& f, const MemoryPlan& plan);

}  // namespace k3
