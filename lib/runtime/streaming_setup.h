// Layer runtime: where weights come from (resident, streamed trunk, expert cache) and the memory plan that decides.
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
#include "platform/memory_limits.h"
#include "runtime/memory_plan.h"
#include "runtime/preset_plan.h"
#include "runtime/streaming_weights.h"

namespace k3 {

class Checkpoint;

struct StreamingRequest {
  std::string trunk_dir;
  std::string preset;
  double trunk_gb = -1;  // < 0: not given
  double cache_gb = -1;
  double block_mb = -1;  // < 0: the preset's
  // The largest prefill batch wanted (the prompt's length, at most 256): the
  // plan lowers it to the preset's largest batch, and further while the plan
  // does not fit the memory available (PreparedStream::plan.batch).
  uint64_t context = 0;  // positions the plan must hold
  // `context` is a tool's default ceiling (k3-chat's 8192), not what the
  // run needs: --preset auto then chooses for the standard run, as k3-doctor
  // recommends (choose_auto_preset).
  bool context_is_default = false;
  uint64_t batch = 256;
  // Prompt tokens one read of the weights should cover (the layer-major
  // prefill's chunk, PlanRequest::chunk); 0: the context. Halved, before
  // the batch, while the plan does not fit the memory available.
  uint64_t chunk = 0;
  // The chunk's block states spilled to a file beside the trunk
  // (PlanRequest::spill_chunk): chosen before the chunk is halved, where a
  // packed trunk gives the file a place.
  bool spill_chunk = false;
  uint64_t sequences = 1;         // decoded together (k3-forward --batch)
  uint64_t state_snapshots = 0;   // KDA state copies for rolling back drafts (--spec)
  DraftMemory draft;              // --draft (PlanRequest)
  uint64_t kept_state_bytes = 0;  // k3-serve --keep-mb (PlanRequest)
  // Speculation on by default (k3-chat): when the plan does not fit, the
  // rollback copies (so the drafts per pass) are halved first, down to none,
  // before the prefill batch is lowered; an explicit --spec is refused instead.
  bool snapshots_optional = false;
  int io_threads = 8;
  int compute_threads = 1;
  // Which cached expert makes room (--expert-cache-policy); never the bytes.
  ExpertCachePolicyKind cache_policy = kDefaultExpertCachePolicy;
  bool expert_lookahead = false;  // --expert-lookahead (StreamingWeights::set_expert_lookahead)
  // Streaming is wanted when any of these flags was given.
  bool active() const {
    return !trunk_dir.empty() || !preset.empty() || trunk_gb >= 0 || cache_gb >= 0 || block_mb >= 0;
  }
};

// Resolves the budgets (preset, then explicit flags; default: the laptop
// preset). Throws kUsage for an unknown preset or --trunk-gb without --trunk.
void resolve_budgets(StreamingRequest& req, uint64_t* trunk_bytes, uint64_t* cache_bytes);

// The request's row-block budget in bytes (0: whole layers) and largest
// prefill batch, from the preset and --block-mb.
uint64_t resolve_block_bytes(const StreamingRequest& req);
uint64_t resolve_max_batch(const StreamingRequest& req);

struct PreparedStream {
  TrunkLayout layout;
  MemoryPlan plan;
  PlanRequest plan_request;
  std::string preset;  // the preset the budgets started from ("auto" resolved; "laptop" by default)
};

// What a run adds to the standard one, for --preset auto and --list-presets
// alike: its sequences, rollback copies (not optional ones, which the plan
// lowers when memory is short), draft model and kept conversation states;
// the context is the standard kPresetListContext (callers set their own).
PresetRun preset_run_for(const StreamingRequest& req);
// `--preset auto`, the one decision every tool makes (k3-forward, k3-chat,
// k3-serve) and k3-doctor recommends: choose_preset over the checkpoint's
// plan model for the standard run (kPresetListContext positions, as
// k3-doctor and --list-presets plan) or the run's own context when it needs
// more (not a default ceiling: context_is_default), its sequences,
// rollback copies (not optional ones), draft model (--draft: resident,
// or streamed on presets that stream in row blocks) and kept conversation
// states (k3-serve --keep-mb), against `available` bytes. The
// forecast a tool prints is then its own plan's peak (prepare_streaming).
PresetChoice choose_auto_preset(const ModelConfig& config, const Checkpoint& checkpoint, const StreamingRequest& req,
                                uint64_t available);
// Where MemoryLimits::available() came from, for messages: "MemAvailable",
// "MemAvailable and cgroup v2 /sys/fs/cgroup/.../memory.max", ...
std::string available_source(const MemoryLimits& lim);

// Opens the trunk (or plans the in-memory trunk from the shards), computes the
// plan, writes it to `log`, and throws k3::Error(kResource) with one line when
// its forecast exceeds 90% of the memory available. Allocates nothing large.
PreparedStream prepare_streaming(const ModelConfig& config, const Checkpoint& checkpoint, StreamingRequest req,
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

}  // namespace k3
