// Layer runtime: where weights come from (resident, or streamed: trunk stream and expert cache composed) and the plan
// checks that choose.
//
// What k3-forward needs to run in a memory budget: turning --trunk,
// --trunk-gb, --cache-gb, --preset and --ctx into a memory plan, printing
// it and refusing a plan that does not fit, before the StreamingWeights are
// built (engine/model.h; cli/run_figures.h reports the counters).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>

#include "model/config.h"
#include "planning/memory_plan.h"
#include "planning/preset_plan.h"
#include "platform/memory_limits.h"
#include "runtime/streaming_weights.h"

namespace k3 {

class Checkpoint;

// Resolves the budgets (preset, then explicit flags; default: the laptop
// preset). Throws kUsage for an unknown preset or --trunk-gb without --trunk.
void resolve_budgets(const RunRequest& req, uint64_t* trunk_bytes, uint64_t* cache_bytes);

// The request's row-block budget in bytes (0: whole layers) and largest
// prefill batch, from the preset and --block-mb.
uint64_t resolve_block_bytes(const RunRequest& req);
uint64_t resolve_max_batch(const RunRequest& req);

struct PreparedStream {
  TrunkLayout layout;
  MemoryPlan plan;
  RunRequest plan_request;  // the request as planned: budgets in bytes, batch and chunk resolved
  std::string preset;       // the preset the budgets started from ("auto" resolved; "laptop" by default)
};

// The standard run with what `req` adds to it, for --preset auto,
// --list-presets and a server's sizing alike: its sequences, rollback copies
// (not optional ones, which the plan lowers when memory is short), draft
// model and kept conversation states; the context is the standard
// kPresetListContext (callers set their own) and the prefill chunk one
// batch, as the presets are sized.
RunRequest standard_run(const RunRequest& req);
// `--preset auto`, the one decision every tool makes (k3-forward, k3-chat,
// k3-serve) and k3-doctor recommends: choose_preset over the checkpoint's
// plan model for the standard run (kPresetListContext positions, as
// k3-doctor and --list-presets plan) or the run's own context when it needs
// more (not a default ceiling: context_is_default), its sequences,
// rollback copies (not optional ones), draft model (--draft: resident,
// or streamed on presets that stream in row blocks) and kept conversation
// states (k3-serve --keep-mb), against `available` bytes. The
// forecast a tool prints is then its own plan's peak (prepare_streaming).
PresetChoice choose_auto_preset(const ModelConfig& config, const Checkpoint& checkpoint, const RunRequest& req,
                                uint64_t available);
// Where MemoryLimits::available() came from, for messages: "MemAvailable",
// "MemAvailable and cgroup v2 /sys/fs/cgroup/.../memory.max", ...
std::string available_source(const MemoryLimits& lim);

// Opens the trunk (or plans the in-memory trunk from the shards), computes the
// plan, writes it to `log`, and throws k3::Error(kResource) with one line when
// its forecast exceeds 90% of the memory available. Allocates nothing large.
PreparedStream prepare_streaming(const ModelConfig& config, const Checkpoint& checkpoint, RunRequest req,
                                 std::ostream& log);
// K3_PREFILL_CHUNK=<tokens> (test-only, CONTRIBUTING.md): the prompt tokens
// one weight read covers, instead of the plan's choice, for a run and for
// --plan alike; the output does not depend on it, so tests compare runs at
// several chunks bit for bit. 0: unset; a bad value is refused (kUsage).
uint64_t prefill_chunk_override();
// K3_PREFILL_SPILL=1 (test-only, CONTRIBUTING.md): spill the chunk's block
// states (with a packed trunk) whether or not memory is short, so tests
// compare spilled and unspilled runs bit for bit. Other values are refused.
bool prefill_spill_override();
// K3_PREFILL_LEND=1 (test-only, CONTRIBUTING.md): lend the expert cache's
// slots beyond the chunk's own to the prefill's chunk (RunRequest::lend_cache)
// whether or not memory is short, so tests compare lending and keeping runs
// bit for bit. Other values are refused.
bool prefill_lend_override();
// K3_PREFILL_HOLD=1 (test-only, CONTRIBUTING.md): hold each streamed layer
// whole for a chunk (RunRequest::hold_layer) wherever the trunk streams in
// row blocks, whether or not it moves fewer bytes, so tests compare held and
// plain runs bit for bit. Other values are refused.
bool prefill_hold_override();
// K3_PREFILL_HOLD_LIMIT=<bytes> (test-only, CONTRIBUTING.md): a held chunk's
// hold limit (RunRequest::hold_limit): the layers whose sections are larger
// stream in row blocks inside the held chunk, so tests compare them with
// plain runs bit for bit. 0 or unset: none; a bad value is refused (kUsage).
uint64_t prefill_hold_limit_override();
// K3_PREFILL_LEND_STATE=1 (test-only, CONTRIBUTING.md): lend the sequences'
// layer states to the prefill's chunk (RunRequest::lend_state; with a packed
// trunk and a chunk longer than the batch) whether or not memory is short,
// so tests compare lending and keeping runs bit for bit. Other values are
// refused.
bool prefill_lend_state_override();

}  // namespace k3
