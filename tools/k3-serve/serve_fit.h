// k3-serve's shape for the machine: how many requests share a weight pass
// (--slots), the RAM kept for conversation states (--keep-mb) and the
// context each request may use (--ctx), sized so that a memory preset means
// the same machine for the server as for k3-forward and k3-chat.
//
// With a preset (or budgets) and a packed trunk, when the memory available
// is known:
// - the flags not given are lowered until the plan fits: first --slots
//   (halved down to 1), then --keep-mb (halved, then 0), then --ctx (halved
//   down to 4096, the context every preset is sized for);
// - when nothing was lowered and --ctx was not given, the context is the
//   largest power of two that still fits (at most 131072 positions and the
//   model's max_position_embeddings), so agents' long prompts fit;
// - when no such lowering fits, the refusal names every flag, with values,
//   that would make it fit: --slots, --keep-mb, --ctx and --trunk-gb/
//   --cache-gb for the same preset, or a smaller --preset.
// Every figure is the preset's plan (planning/preset_plan.h), which is the
// plan the server then makes and refuses on.
#pragma once

#include <cstdint>
#include <string>

#include "cli/model_options.h"
#include "platform/memory_limits.h"

namespace k3 {

class Checkpoint;
struct ModelConfig;

// The server's shape, and which parts of it the command line fixed.
struct ServeShape {
  uint64_t slots = 4;
  uint64_t keep_bytes = 512'000'000;
  uint64_t context = 8192;
  bool slots_given = false, keep_given = false, context_given = false;
};

// The largest context chosen when --ctx is not given.
inline constexpr uint64_t kLargestServeContext = 131072;

// Sizes `shape` for `options`' preset or budgets (options.stream, with
// what a draft adds already set) and the memory `limits` allow; returns the line
// saying what was chosen ("" when nothing was). Throws k3::Error
// (kResource) with the flags that fit when nothing the rules allow fits.
std::string fit_serve_shape(const ModelConfig& config, const Checkpoint& checkpoint, const ModelOptions& options,
                            const MemoryLimits& limits, ServeShape& shape);

}  // namespace k3
