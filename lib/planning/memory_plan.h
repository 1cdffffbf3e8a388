// Layer planning: the memory plan of a run (one RunRequest, presets, forecasts) made before anything loads.
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
#include "planning/run_request.h"
#include "trunk/layout.h"

namespace k3 {

struct RowBlockTables;

// Largest head block when no layer streams (so no layer-sized buffer exists).
inline constexpr uint64_t kHeadBlockCap = 256ull << 20;
// Stream buffers beyond the two a pipeline needs let the disk read further
// ahead (so it never idles while a slow layer computes). They are planned
// from a fixed allowance of this many bytes plus the part of the trunk
// budget that pinned sections left unused, up to kMaxStreamBuffers.
inline constexpr uint64_t kPrefetchAllowance = 512ull << 20;
inline constexpr int kMaxStreamBuffers = 4;
// Expert cache slots a layer-major chunk keeps while the rest of the cache
// is lent to it (RunRequest::lend_cache): its routed experts run one at a
// time on all the rows that chose them (model/latent_moe_chunk.h), so one
// slot computes while the next expert is read into the other. Decode needs
// its floor (one layer's top-k, all in flight at once) only after the chunk
// has given the cache back.
inline constexpr uint64_t kChunkExpertSlots = 2;

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
  // Slots a chunk keeps when the cache is lent to it: kChunkExpertSlots, at
  // most the floor.
  uint64_t chunk_slots = 0;
  // The cache's bytes beyond the chunk's slots lent to the prefill's chunk
  // (RunRequest::lend_cache): the chunk and those slots never hold memory at
  // once, so the peak counts the larger of the two (prefill_decode_peak).
  uint64_t cache_lent_bytes = 0;
  // State and the rest.
  uint64_t kda_state_bytes = 0;  // the sequences', their rollback copies and a stoppable pass's copies
  uint64_t mla_cache_bytes = 0;
  uint64_t batch = 0;             // prefill rows computed at once (the request's)
  uint64_t chunk = 0;             // prompt tokens one weight read covers (>= batch)
  uint64_t chunk_bytes = 0;       // the chunk's carried state in memory (0 when chunk == batch)
  bool chunk_spilled = false;     // its block states spilled (only when chunk > batch)
  uint64_t spill_file_bytes = 0;  // the spill file's size on disk (0 when not spilled)
  // Rows of the chunk a layer's products take at once (>= batch, <= chunk):
  // row blocks are read once per this many tokens. Its scratch beyond a
  // batch's is in chunk_bytes.
  uint64_t chunk_sub_batch = 0;
  // A held chunk (RunRequest::hold_layer, row-block mode, chunk > batch):
  // while it runs, each streamed layer is read whole into one hold buffer of
  // hold_bytes (the largest layer section it takes, and a compressed
  // section's staging), its row blocks once per chunk, and the sub-batch is
  // one piece. The pinned layer sections (pinned_lent_bytes; as stored in
  // trunk.bin, pinned_lent_read_bytes) are freed for the chunk, pass
  // through the hold buffer like streamed ones, and are read again after
  // it. The stream buffers but one (buffers_lent_bytes) are freed for the
  // chunk too: only head blocks pass through them while the layers are held.
  // The peak counts the larger of (chunk + hold buffer) and (lent cache +
  // lent pinned layers + lent stream buffers), as for the cache
  // (prefill_decode_peak).
  bool layer_held = false;
  uint64_t hold_bytes = 0;
  uint64_t pinned_lent_bytes = 0;
  uint64_t pinned_lent_read_bytes = 0;
  uint64_t buffers_lent_bytes = 0;
  // A held chunk's hold limit (RunRequest::hold_limit): hold_section_bytes
  // is the largest layer section held (at most the limit). The streamed
  // layers larger (skipped_layers, skipped_read_bytes as stored) stream in
  // row blocks once per piece of the chunk, through the stream buffers
  // lent to the hold, which take the hold buffer's memory while such a
  // layer runs (hold_bytes is at least buffers_lent_bytes then); the pinned
  // ones larger stay pinned. hold_next_limit: the largest layer section
  // below hold_section_bytes (0: none), the search's next limit.
  uint64_t hold_limit = 0;  // the request's (0: none)
  uint64_t hold_section_bytes = 0;
  uint64_t skipped_layers = 0;
  uint64_t skipped_bytes = 0;
  uint64_t skipped_read_bytes = 0;
  uint64_t hold_next_limit = 0;
  // The sequence state lent to the chunk (RunRequest::lend_state, a chunk
  // longer than a batch): the chunk's sequences' KDA states and MLA caches,
  // and a stoppable pass's KDA copies (the file holds the state before the
  // chunk), less the one layer's state each sequence keeps in memory while
  // it runs (the largest layer's: one KDA layer's state or one MLA layer's
  // cache at the context). The chunk and the lent state never hold memory at
  // once: the peak counts them on the two sides of prefill_decode_peak. The
  // file's size is state_loan_file_bytes.
  uint64_t state_lent_bytes = 0;
  uint64_t state_loan_file_bytes = 0;
  uint64_t per_sequence_bytes = 0;  // one sequence's KDA state + MLA cache (included above per sequence)
  uint64_t activation_bytes = 0;
  uint64_t draft_bytes = 0;       // the draft model: weights, buffers, context (--draft)
  bool draft_streamed = false;    // its matrices are read per draft pass in row blocks of block_bytes
  uint64_t kept_state_bytes = 0;  // kept conversation states (the request's; those on their way to disk among them)
  uint64_t io_bytes = 0;          // embedding row buffers, index, thread stacks
  uint64_t peak_rss = 0;          // the forecast: sum of the above (prefill_decode_peak)

  // Multi-line description for stderr (no trailing newline).
  std::string describe(const TrunkLayout& layout, const ModelConfig& config, const RunRequest& req) const;
};

// Whether a plan may start where `available` bytes are available (see
// MemoryLimits::available; UINT64_MAX: unknown). It must stay under 90% of
// them: the forecast leaves out the page cache and allocator slack, and a run
// killed for memory hours in loses the work.
inline uint64_t plan_limit(uint64_t available) { return available / 10 * 9; }
inline bool plan_fits(const MemoryPlan& plan, uint64_t available) {
  return available == UINT64_MAX || plan.peak_rss <= plan_limit(available);
}

// Sets plan.cache_lent_bytes (the cache's bytes beyond the chunk's slots where
// `lend` and a chunk longer than a batch runs, and the cache does not hold
// every expert) and plan.peak_rss: every part of the plan, with the larger
// of (the chunk + the hold buffer) and (the lent cache + the lent pinned
// layers and stream buffers + the lent sequence state, state_lent_bytes) in
// place of their sum (the prefill's peak is
// the rest + the floor + the chunk + the hold buffer; decode's the rest +
// the whole cache + every pinned section and stream buffer).
void prefill_decode_peak(const ModelConfig& config, MemoryPlan& plan, bool lend);

// `slot_bytes` comes from ExpertIndex::slot_bytes(). Throws k3::Error(kUsage)
// for a block budget below min_block_bytes(config). `tables`: the layout's
// row blocks at req.block_bytes, built once for many plans
// (planning/row_block_tables.h); built here where absent.
MemoryPlan plan_memory(const ModelConfig& config, const TrunkLayout& layout, uint64_t slot_bytes, const RunRequest& req,
                       const RowBlockTables* tables = nullptr);

// The plan for a model known only by its config, before any weights exist
// here: the trunk laid out as k3-pack would lay it out, each expert slot one
// aligned read of its tensors. For forecasts at K3's real geometry.
MemoryPlan plan_memory_for_config(const ModelConfig& config, const RunRequest& req, TrunkLayout* layout = nullptr);

// KDA state copies a stoppable pass holds (RunRequest::stoppable_passes):
// one per sequence, counted in MemoryPlan::kda_state_bytes.
uint64_t plan_stop_copies(const RunRequest& req);

// One expert cache slot for the model of `manifest` (expected_tensors):
// its tensors as one read aligned at both ends, as ExpertIndex plans it.
uint64_t expert_slot_bytes(const ModelConfig& config, const std::vector<ExpectedTensor>& manifest);

}  // namespace k3
