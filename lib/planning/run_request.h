// What a run asks of the memory plan and of the weights, one type from the
// tools' settings to plan_memory and the run: where the weights come from
// and the budgets asked for (a preset, or explicit GB), the budgets as
// resolved in bytes, and the run's shape (context, prefill batch and chunk,
// sequences, rollback copies, draft model, kept states, threads). A run,
// `--plan`, `--list-presets`, `--preset auto` and k3-doctor's forecast all
// plan one of these, so a term counted for one is counted for all unless
// a step says otherwise (standard_run).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "expert_cache/expert_cache_policy.h"

namespace k3 {

// What a draft model adds to the memory plan: one struct from the draft's
// config (draft/dspark_memory.h) through the run request to the plan, so
// every step carries all four figures at once.
struct DraftMemory {
  uint64_t resident = 0;       // weights held, a prefill batch of taps, a draft pass's activations
  uint64_t streamed_held = 0;  // the same when its large matrices stream (their block buffer not counted)
  uint64_t read_per_pass = 0;  // bytes those matrices take, read again per draft pass when they stream
  uint64_t per_position = 0;   // its context per committed position
};

// The context the presets are sized and listed for (--list-presets and
// k3-doctor without a context of their own).
inline constexpr uint64_t kPresetListContext = 4096;

struct RunRequest {
  // Where the weights come from, as asked: a packed trunk, a preset and
  // explicit budgets in GB (< 0: not given, the preset's). None given
  // (!active()): everything resident. resolve_budgets (runtime/streaming_setup.h)
  // turns them into the byte budgets below.
  std::string trunk_dir;
  std::string preset;
  double trunk_gb = -1;
  double cache_gb = -1;
  double block_mb = -1;

  // The budgets in bytes, as plan_memory reads them.
  bool packed_trunk = true;   // false: the whole trunk is read from the shards and held resident
  uint64_t trunk_budget = 0;  // bytes of trunk sections to pin
  uint64_t cache_budget = 0;  // bytes of expert cache
  // Row-block streaming: 0 streams whole layer sections through buffers the
  // size of the largest one; otherwise every streamed layer passes through
  // the buffers as its held part and blocks of whole rows of at most this
  // many bytes (trunk/row_blocks.h), and head blocks are this size too. At
  // least min_block_bytes(config) (one row of the widest streamed matrix).
  uint64_t block_bytes = 0;
  // Bytes of lm_head rows per block when the head streams; 0: automatic
  // (the stream buffer a layer needs, or at most kHeadBlockCap when every
  // layer is pinned). Any value gives the same logits.
  uint64_t head_block_bytes = 0;
  size_t tensor_count = 0;  // checkpoint tensors (index memory)

  // The run's shape.
  uint64_t context = kPresetListContext;  // positions the MLA latent cache must hold
  // `context` is a tool's default ceiling (k3-chat's 8192), not what the
  // run needs: --preset auto then chooses for the standard run, as k3-doctor
  // recommends (choose_auto_preset).
  bool context_is_default = false;
  // Prefill rows computed at once. Before planning, the largest batch wanted
  // (the prompt's length, at most 256): the plan lowers it to the preset's
  // largest batch, and further while it does not fit the memory available.
  uint64_t batch = 256;
  // Layer-major prefill (ForwardPass::set_chunk): tokens of a prompt one read of
  // the weights covers, their per-token state carried from layer to layer
  // (model/prefill_chunk.h) counted by the plan. 0 or at most `batch`:
  // `batch`. A run asks for 0 (the context), halved before the batch while
  // the plan does not fit the memory available.
  uint64_t chunk = 0;
  // The chunk's block states go to a spill file beside the trunk instead of
  // memory (model/prefill_chunk.h): only a sub-batch of their rows is held.
  // Chosen before the chunk is halved, where a packed trunk gives the file
  // a place.
  bool spill_chunk = false;
  // Rows of a chunk a layer's products take at once (ForwardPass::
  // set_chunk_sub_batch): a trunk streamed in row blocks is read once per
  // this many rows, so the plan counts their scratch. 0 or at most `batch`:
  // `batch`; at most `chunk`.
  uint64_t chunk_sub_batch = 0;
  // Where the trunk streams in row blocks and a chunk is longer than a
  // batch: each streamed layer is read whole into one hold buffer while the
  // chunk runs (TrunkStream::hold_layers), so every row block is read once
  // per chunk whatever the sub-batch, which is then one piece
  // (kChunkPieceRows rows: a spilled chunk's block states read back once per
  // layer). The pinned layer sections are lent to the buffer for the chunk
  // and read again after it (MemoryPlan::pinned_lent_bytes). Chosen by
  // fit_prefill_chunk where it moves fewer bytes.
  bool hold_layer = false;
  // A held chunk's hold limit: bytes of the largest layer section the hold
  // buffer takes (0: the largest layer's, every layer held). A streamed
  // layer whose section is larger is not held: inside the chunk it streams
  // in row blocks as outside one, once per piece (kChunkPieceRows rows),
  // through the stream buffers the hold buffer's memory serves while it
  // runs; a pinned layer over the limit stays pinned (MemoryPlan::
  // skipped_layers). Chosen by fit_prefill_chunk where only a smaller
  // buffer fits.
  uint64_t hold_limit = 0;
  // The expert cache's slots beyond the chunk's own (MemoryPlan::chunk_slots,
  // kChunkExpertSlots) are lent to the chunk during a
  // prefill (ExpertCache::lend: dropped for the chunk, refilled by decode),
  // so the plan counts the larger of the prefill's peak and decode's, not
  // their sum (MemoryPlan::cache_lent_bytes). Chosen by fit_prefill_chunk
  // where it lets a longer chunk fit.
  bool lend_cache = false;
  // The sequence state lent to the chunk: while a chunk longer than a batch
  // runs, every layer's KDA state and MLA cache of its sequences but the
  // running layer's is in a scratch file beside the trunk (a packed trunk
  // gives it a place; model/state_loan.h), and comes back after the chunk's
  // memory is freed, so the plan counts the larger of the chunk and the
  // lent state, not their sum (MemoryPlan::state_lent_bytes). Chosen by
  // fit_prefill_chunk where it lets a plan fit that does not otherwise.
  bool lend_state = false;
  uint64_t sequences = 1;  // decoded together: each holds its KDA state and MLA cache
  // KDA state copies kept to roll back verified rows (drafts per pass).
  uint64_t state_snapshots = 0;
  // Passes that may be stopped part-way with every sequence put back
  // (ForwardPass::set_stop with restore; k3-serve's prompt passes): each
  // sequence's KDA state is copied before its layer runs, so one more KDA
  // state per sequence is held from the first such pass on.
  bool stoppable_passes = false;
  // Speculation on by default (k3-chat): when the plan does not fit, the
  // rollback copies (so the drafts per pass) are halved first, down to none,
  // before the prefill batch is lowered; explicitly asked ones are refused
  // instead.
  bool snapshots_optional = false;
  // A draft model: its weights and buffers held in RAM, and its context per
  // position (for `context` positions). When the trunk streams in row
  // blocks (block_bytes > 0) and draft.streamed_held is set, the draft
  // streams too: only draft.streamed_held bytes are held, and its
  // draft.read_per_pass bytes are read again for every draft pass through
  // one buffer of block_bytes.
  DraftMemory draft;
  // RAM for conversation states kept between requests (a server's), those
  // on their way to disk included: they are written from the kept state (no
  // copy) and count against this until written (serve/conversation_cache.h).
  uint64_t kept_state_bytes = 0;
  int io_threads = 8;  // parallel reads in flight when streaming
  int compute_threads = 1;

  // How the expert cache behaves: which cached expert makes room (never
  // the bytes), and whether the next layer's experts are guessed and read
  // ahead (StreamingWeights::set_expert_lookahead).
  ExpertCachePolicyKind cache_policy = kDefaultExpertCachePolicy;
  bool expert_lookahead = false;

  // A Vulkan device for the prompt's products (lib/gpu; docs/gpu.md): its
  // index, -1 for the CPU alone; and the device memory they may hold, MB
  // (1e6 bytes; 0: no cap), refused at plan time when the largest product
  // over the rows of one device call would need more.
  int gpu_device = -1;
  double gpu_mb = 0;

  // Streaming is wanted when a trunk, a preset or a budget was asked for.
  bool active() const {
    return !trunk_dir.empty() || !preset.empty() || trunk_gb >= 0 || cache_gb >= 0 || block_mb >= 0;
  }
};

// The keys messages name the request's settings by (common/setting_spelling.h):
// its fields' names, which a front end spells as its users write them (the
// command-line tools: --trunk, --preset, --trunk-gb, --cache-gb, --block-mb,
// --ctx, k3-serve's --keep-mb, --gen).
namespace run_setting {
inline constexpr const char* kTrunkDir = "trunk_dir";
inline constexpr const char* kPreset = "preset";
inline constexpr const char* kTrunkGb = "trunk_gb";
inline constexpr const char* kCacheGb = "cache_gb";
inline constexpr const char* kBlockMb = "block_mb";
inline constexpr const char* kContext = "context";
inline constexpr const char* kKeptStateBytes = "kept_state_bytes";
// Not a field: the ids a run generates after its prompt, which with the
// prompt and a saved state decide the positions it spans (the tools' --gen).
inline constexpr const char* kMaxNew = "max_new";
}  // namespace run_setting

}  // namespace k3
