// The memory plan of a k3-forward run, computed before anything large is
// allocated: which trunk sections are pinned and which stream, how many
// expert cache slots fit, the sequence state for the requested context, I/O
// buffers and activations, and the forecast peak RSS that decides whether
// the run may start.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/tensor_manifest.h"
#include "trunk/layout.h"

namespace k3 {

// What a draft model (--draft) adds to the memory plan: one struct from the
// draft's config (draft/dspark_memory.h) through the tools' requests and the
// presets to the plan, so every step copies all four figures at once.
struct DraftMemory {
  uint64_t resident = 0;       // weights held, a prefill batch of taps, a draft pass's activations
  uint64_t streamed_held = 0;  // the same when its large matrices stream (their block buffer not counted)
  uint64_t read_per_pass = 0;  // bytes those matrices take, read again per draft pass when they stream
  uint64_t per_position = 0;   // its context per committed position
};

struct PlanRequest {
  bool packed_trunk = true;   // false: the whole trunk is read from the shards and held resident
  uint64_t trunk_budget = 0;  // bytes of trunk sections to pin
  uint64_t cache_budget = 0;  // bytes of expert cache
  uint64_t context = 4096;    // positions the MLA latent cache must hold
  uint64_t batch = 256;       // prefill rows computed at once
  // Layer-major prefill (Engine::set_chunk): tokens of a prompt one read of
  // the weights covers, their per-token state carried from layer to layer
  // (model/prefill_chunk.h) counted here. 0 or at most `batch`: `batch`.
  uint64_t chunk = 0;
  // The chunk's block states go to a spill file beside the trunk instead of
  // memory (model/prefill_chunk.h): only a sub-batch of their rows is held.
  bool spill_chunk = false;
  uint64_t sequences = 1;        // sequences decoded together (--batch): each holds its KDA state and MLA cache
  uint64_t state_snapshots = 0;  // KDA state copies kept to roll back verified rows (--spec: drafts per pass)
  // A draft model (--draft): its weights and buffers held in RAM, and its
  // context per position (for `context` positions). When the trunk streams
  // in row blocks (block_bytes > 0) and draft.streamed_held is set, the
  // draft streams too: only draft.streamed_held bytes are held, and its
  // draft.read_per_pass bytes are read again for every draft pass through
  // one buffer of block_bytes.
  DraftMemory draft;
  // RAM for conversation states kept between requests (k3-serve --keep-mb).
  uint64_t kept_state_bytes = 0;
  int io_threads = 8;
  int compute_threads = 1;
  size_t tensor_count = 0;  // checkpoint tensors (index memory)
  // Bytes of lm_head rows per block when the head streams; 0: automatic
  // (the stream buffer a layer needs, or at most kHeadBlockCap when every
  // layer is pinned). Any value gives the same logits.
  uint64_t head_block_bytes = 0;
  // Row-block streaming: 0 streams whole layer sections through buffers the
  // size of the largest one; otherwise every streamed layer passes through
  // the buffers as its held part and blocks of whole rows of at most this
  // many bytes (trunk/row_blocks.h), and head blocks are this size too. At least
  // min_block_bytes(config) (one row of the widest streamed matrix).
  uint64_t block_bytes = 0;
};

// Largest head block when no layer streams (so no layer-sized buffer exists).
inline constexpr uint64_t kHeadBlockCap = 256ull << 20;
// Stream buffers beyond the two a pipeline needs let the disk read further
// ahead (so it never idles while a slow layer computes). They are planned
// from a fixed allowance of this many bytes plus the part of the trunk
// budget that pinned sections left unused, up to kMaxStreamBuffers.
inline constexpr uint64_t kPrefetchAllowance = 512ull << 20;
inline constexpr int kMaxStreamBuffers = 4;

struct MemoryPlan {
  // Trunk: sections in use order (layers 0..n-1, then the head; then the
  // embedding, pinned only when all of those are and it fits the budget too).
  std::vector<int> pinned;  // indices into TrunkLayout::sections
  std::vector<int> streamed;
  uint64_t pinned_bytes = 0;
  // Streamed sections pass through stream_buffers buffers of
  // stream_buffer_size bytes each: the largest streamed *layer* section or
  // one head block, whichever is larger. With n buffers the next n - 1
  // units are read while one computes.
  // In row-block mode (block_bytes > 0) the buffers are the size of the
  // largest block or held part instead (at least 3: the held part, the block
  // being multiplied and the next one being read).
  int stream_buffers = 0;
  uint64_t stream_buffer_size = 0;
  uint64_t block_bytes = 0;          // the request's block budget; 0: whole layers
  uint64_t held_bytes = 0;           // largest held part of a streamed layer (row-block mode)
  uint64_t row_blocks = 0;           // layer row blocks per token (row-block mode)
  uint64_t stream_buffer_bytes = 0;  // stream_buffers x stream_buffer_size
  // The head when it streams: lm_head in blocks of head_block_rows rows (the
  // logits are computed block by block), its small tensors (final norm,
  // output AttnRes) read once and kept.
  bool head_streamed = false;
  uint64_t head_block_rows = 0;
  uint64_t head_blocks = 0;
  uint64_t head_block_read_bytes = 0;  // aligned read of one full block
  uint64_t head_small_bytes = 0;
  uint64_t embedding_bytes = 0;   // its section's bytes
  bool embedding_pinned = false;  // in `pinned` (and pinned_bytes); else its rows are read on demand
  // Bytes read from trunk.bin per token: the streamed layer sections and a
  // streamed head's lm_head, as stored (compressed sizes for a compressed
  // trunk, whose streamed units are decoded into the stream buffers as they
  // arrive through stream_staging_bytes of pieces per buffer).
  uint64_t streamed_read_bytes = 0;
  uint64_t streamed_decoded_bytes = 0;  // the same units decoded
  uint64_t stream_staging_bytes = 0;    // all buffers' staging (0 when nothing compressed streams)
  // Expert cache.
  uint64_t slot_bytes = 0;
  uint64_t cache_slots = 0;
  uint64_t cache_bytes = 0;
  uint64_t min_slots = 0;  // floor: one layer's top-k experts, all in flight at once
  // State and the rest.
  uint64_t kda_state_bytes = 0;
  uint64_t mla_cache_bytes = 0;
  uint64_t batch = 0;               // prefill rows computed at once (the request's)
  uint64_t chunk = 0;               // prompt tokens one weight read covers (>= batch)
  uint64_t chunk_bytes = 0;         // the chunk's carried state in memory (0 when chunk == batch)
  bool chunk_spilled = false;       // its block states spilled (only when chunk > batch)
  uint64_t spill_file_bytes = 0;    // the spill file's size on disk (0 when not spilled)
  uint64_t per_sequence_bytes = 0;  // one sequence's KDA state + MLA cache (included above per sequence)
  uint64_t activation_bytes = 0;
  uint64_t draft_bytes = 0;       // the draft model: weights, buffers, context (--draft)
  bool draft_streamed = false;    // its matrices are read per draft pass in row blocks of block_bytes
  uint64_t kept_state_bytes = 0;  // kept conversation states (the request's)
  uint64_t io_bytes = 0;          // embedding row buffers, index, thread stacks
  uint64_t peak_rss = 0;          // the forecast: sum of the above

  // Multi-line description for stderr (no trailing newline).
  std::string describe(const TrunkLayout& layout, const ModelConfig& config, const PlanRequest& req) const;
};

// Whether a plan may start where `available` bytes are available (see
// MemoryLimits::available; UINT64_MAX: unknown). It must stay under 90% of
// them: the forecast leaves out the page cache and allocator slack, and a run
// killed for memory hours in loses the work.
inline uint64_t plan_limit(uint64_t available) { return available / 10 * 9; }
inline bool plan_fits(const MemoryPlan& plan, uint64_t available) {
  return available == UINT64_MAX || plan.peak_rss <= plan_limit(available);
}

// `slot_bytes` comes from ExpertIndex::slot_bytes(). Throws k3::Error(kUsage)
// for a block budget below min_block_bytes(config).
MemoryPlan plan_memory(const ModelConfig& config, const TrunkLayout& layout, uint64_t slot_bytes,
                       const PlanRequest& req);

// The plan for a model known only by its config, before any weights exist
// here: the trunk laid out as k3-pack would lay it out, each expert slot one
// aligned read of its tensors. For forecasts at K3's real geometry.
MemoryPlan plan_memory_for_config(const ModelConfig& config, const PlanRequest& req, TrunkLayout* layout = nullptr);

// One expert cache slot for the model of `manifest` (expected_tensors):
// its tensors as one read aligned at both ends, as ExpertIndex plans it.
uint64_t expert_slot_bytes(const ModelConfig& config, const std::vector<ExpectedTensor>& manifest);

}  // namespace k3
