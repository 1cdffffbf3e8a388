// What a layer-major prefill carries for its chunk of tokens from one layer
// to the next (ForwardPass::set_chunk): the residual stream's running sum p and
// block states B for every token of the chunk, and the routed-expert rows of
// the MoE layer being run (model/latent_moe_chunk.h). The KDA state and the
// MLA latent cache are the sequence's own (SequenceState) and are counted
// by the memory plan already.
//
// The block states are most of the stream (8 of its 9 rows a token at K3's
// geometry) and are written once, when their block opens, then only read:
// where memory is short they go to a spill file (io/spill_file.h) and come
// back a sub-batch of rows at a time, in order, so the file is read
// sequentially and the chunk can be far longer than memory alone allows.
// A MoE layer's shared-expert rows follow them in the file (written and read
// back once per layer, model/latent_moe_chunk.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/config.h"
#include "model/latent_moe_chunk.h"

namespace k3 {

class SpillFile;
namespace kernels {
class ComputeBackend;
}

// Rows of the chunk's block states a layer mixes at a time (ChunkBlocks::
// piece_rows): a spilled chunk stages this many rows of each block, however
// long its sub-batch, and the layer's mixed rows h take one piece. As many
// as the largest preset's batch: a sub-batch of one batch is one piece, read
// back once per layer (a longer one is read for both of a layer's mixes).
inline constexpr size_t kChunkPieceRows = 256;

// The chunk's AttnRes block states, each [rows, hidden]: in memory, or in a
// spill file with one piece of rows of each staged in memory. With a
// compute device installed on the thread (kernels::current_compute_backend)
// each block is also copied to the device when it opens, as many as it
// keeps, and the mixes (mix) read them there: a spilled chunk's file is then
// not read back for them. The copy in memory or the file stays, for the
// mixes the device declines.
class ChunkBlocks {
 public:
  // Starts a chunk of `rows` rows whose block states are mixed `piece` rows
  // at a time (spill: nullptr keeps the blocks in memory). Grows only.
  void begin(const ModelConfig& config, size_t rows, size_t piece, SpillFile* spill);
  size_t count() const { return count_; }
  size_t piece_rows() const { return piece_; }
  bool spilled() const { return spill_ != nullptr; }
  // Opens a block: its state is p [rows, hidden] as it is now.
  void open(const float* p);
  // kernels::attn_res_mix of rows [r0, r0 + m) over the first `count` block
  // states and p (those rows' partial sums) into out [m, hidden]: on the
  // device from the blocks it keeps where it keeps any, else through
  // attn_res_mix_on_backend over rows() (the same bits either way).
  void mix(size_t r0, size_t m, size_t count, const float* p, const uint16_t* proj, const float* norm, float eps,
           float* out, float* scratch);
  // Blocks the device keeps for this chunk (the first ones opened).
  size_t kept_on_device() const { return kept_; }
  // Rows [r0, r0 + m) of the first `count` blocks, one pointer each, valid
  // until the next call. Spilled (m at most piece_rows()): read back from the
  // file, all but the blocks already staged by the calls since unstage() for
  // the same rows (a layer's second mix of a sub-batch of one piece reads
  // only the block the layer opened).
  const std::vector<const float*>& rows(size_t r0, size_t m, size_t count);
  // The next rows() reads every block it returns (a layer begins: the count
  // of reads per layer is the plan's, prefill_forecast.h).
  void unstage() { staged_m_ = 0; }
  uint64_t bytes() const { return mem_.size() * sizeof(float); }

 private:
  std::vector<float> mem_;  // every block's rows, or (spilled) a piece of each
  std::vector<const float*> out_;
  SpillFile* spill_ = nullptr;
  size_t rows_ = 0, hidden_ = 0, piece_ = 0, count_ = 0;
  size_t staged_r0_ = 0, staged_m_ = 0, staged_count_ = 0;  // what mem_ holds, spilled
  kernels::ComputeBackend* device_ = nullptr;               // the chunk's, where one keeps blocks
  size_t keepable_ = 0, kept_ = 0;                          // blocks the device can keep, and keeps
};

struct PrefillChunk {
  std::vector<float> p;  // [rows, hidden]
  ChunkBlocks blocks;
  MoeChunkRows moe;

  // Sizes the buffers for a chunk of `rows` tokens whose block states are
  // mixed `piece` rows at a time (grows only); spill as ChunkBlocks::begin.
  void reserve(const ModelConfig& config, size_t rows, size_t piece, SpillFile* spill);
  uint64_t bytes() const;
};

// Bytes a chunk carries per token: what the memory plan multiplies by the
// chunk's tokens. Spilled, the part that stays in memory (what
// spill_file_bytes_per_token leaves), plus the staged rows:
// prefill_chunk_staging_bytes per sub-batch.
uint64_t prefill_chunk_bytes_per_token(const ModelConfig& config, bool spilled = false);
// The block states a token spills to the file (all of them: written once).
uint64_t spilled_block_bytes_per_token(const ModelConfig& config);
// The spill file's bytes per token: the block states, then one row of the
// MoE layers' shared-expert output (rewritten by every MoE layer).
uint64_t spill_file_bytes_per_token(const ModelConfig& config);
// Memory the spilled blocks' staging takes for sub-batches of `sub_batch`
// rows: one piece of rows of each block (kChunkPieceRows, or the sub-batch
// where shorter).
uint64_t prefill_chunk_staging_bytes(const ModelConfig& config, uint64_t sub_batch);
// Scratch a layer of a chunk takes for a sub-batch of `rows` rows
// (ForwardPass::set_chunk_sub_batch): the rows x and a, one piece of h (the
// stream's p is the chunk's), and the largest op's temporaries, at a context
// of `positions` with one thread.
uint64_t prefill_sub_batch_scratch_bytes(const ModelConfig& config, uint64_t rows, int64_t positions);
// The largest op's floats of that scratch, split over `workers` threads
// (forward_chunk takes them at once, so the area never grows in steps that
// would hold the old and the new area together).
size_t prefill_sub_batch_op_floats(const ModelConfig& config, size_t rows, int64_t positions, size_t workers);

}  // namespace k3
