// Layer model: the Kimi-K3 graph (config, tensor manifest, layers, forward pass, K3 reference geometry).
//
// The Kimi-K3 forward pass over a WeightSource.
//
// forward() runs a batch of new tokens after everything the SequenceState
// already holds: the prompt in one call (prefill: each weight matrix read once
// per batch, each routed expert once for all the rows that chose it), then one
// token per call (decode). A token's logits are bit-identical whichever way
// it was computed and for any thread count. The state is plain data, so it can
// be saved and restored between calls (state files).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "io/spill_file.h"
#include "model/config.h"
#include "model/forward_scratch.h"
#include "model/layer_tap.h"
#include "model/prefill_chunk.h"
#include "model/sequence_state.h"
#include "model/state_capture.h"
#include "model/token_ids.h"
#include "model/weight_source.h"

namespace k3 {

class ThreadPool;
namespace kernels {
class ComputeBackend;
}

// Which rows of a pass go through the head. kLastOfEach: the last row of
// every sequence of a forward_sequences() pass (a pass that mixes prompt
// chunks with decode rows wants one row per sequence, not one per id).
enum class LogitRows { kNone, kLast, kAll, kLastOfEach };

class ForwardPass {
 public:
  ForwardPass(const ModelConfig& config, WeightSource& source, ThreadPool& pool);

  const ModelConfig& config() const { return config_; }
  // The weights the passes read (a draft model shares the embedding and lm_head).
  WeightSource& source() { return source_; }

  // Empties `state` and sizes it for this model (a new sequence).
  void reset(SequenceState& state) const;

  // Runs `ids` after state.positions and appends them to the state. Writes
  // logits to `logits`: [vocab] for the last id (kLast) or [ids.size(), vocab]
  // (kAll). Throws Error(kBadInput) for an id outside the vocabulary and
  // before touching the state. `captures` (each of sequence 0, its rows
  // counted in `ids`): states taken inside the prefill, as in
  // forward_sequences_last; the read holding one runs as a chunk.
  void forward(SequenceState& state, std::span<const int32_t> ids, LogitRows rows, float* logits,
               std::span<StateCapture> captures = {});

  // One weight pass over the rows of several sequences: ids[i] runs after
  // *states[i] and is appended to it. Writes the logits of every row, in
  // order, to `logits` [total rows, vocab]. Each row's logits are
  // bit-identical to running its sequence alone. More rows than
  // max_batch() (at most tokens_per_read(), no histories) run layer-major
  // as a prefill chunk does: each layer's weights are read once for all the
  // sequences' rows. `histories`, when not
  // empty, has one entry per sequence (may be null) recording its rows so
  // rollback() can undo some. Throws kBadInput for a bad id before touching
  // any state.
  void forward_sequences(std::span<SequenceState* const> states, std::span<const std::span<const int32_t>> ids,
                         float* logits, std::span<RowHistory* const> histories = {});
  // The same pass, with only each sequence's last row through the head:
  // `logits` [sequences, vocab], row k bit-identical to the logits of the
  // last id of ids[k] run alone. For a server's pass where one sequence's
  // prompt chunk shares the weights with the others' decode rows (the head
  // of every prompt row would cost a vocab-wide matmul per row for nothing).
  // `captures`: states taken inside the pass (model/state_capture.h), each
  // bit-identical to its sequence's state and logits had the pass ended
  // after its capture's rows; the pass still reads each layer's weights
  // once (it runs layer-major, at most tokens_per_read() rows: more is
  // kInternal). A capture costs a cut of the rows of one sub-batch (its
  // KDA state is copied there) and one more row through the head.
  void forward_sequences_last(std::span<SequenceState* const> states, std::span<const std::span<const int32_t>> ids,
                              float* logits, std::span<StateCapture> captures = {});

  // Undoes the rows of the last forward_sequences() of `state` past the
  // first `keep` (1 <= keep <= rows recorded in `history`): KDA recurrent
  // states and conv carries, MLA latent caches, positions and tokens.
  void rollback(SequenceState& state, const RowHistory& history, size_t keep) const;

  // Rows computed at once (bounds the scratch of a pass: attention over the
  // context, the MLPs' temporaries); results do not depend on it.
  void set_max_batch(size_t tokens) { max_batch_ = tokens == 0 ? 1 : tokens; }
  size_t max_batch() const { return max_batch_; }

  // Layer-major prefill: forward() runs a prompt as consecutive chunks of
  // up to this many tokens, each chunk layer by layer, so a layer's trunk
  // weights are acquired once per chunk and each routed expert any of the
  // chunk's rows chose is requested once and computed for all of them
  // (model/prefill_chunk.h). Within a layer the rows go through in
  // sub-batches of max_batch() that reuse the pass's scratch; what a chunk
  // adds is its per-token state carried from layer to layer
  // (prefill_chunk_bytes_per_token). 0 or at most max_batch(): chunks of
  // max_batch() (one pass per batch). Results do not depend on it. A trunk
  // streamed in row blocks through the products (trunk_stream/trunk_stream.h)
  // passes its blocks once per sub-batch, the rest once per chunk.
  void set_chunk(size_t tokens) { chunk_ = tokens; }
  // Rows of a chunk that go through a layer together (0 or at most
  // max_batch(): max_batch()). A trunk streamed in row blocks passes its
  // blocks once per this many rows, so a sub-batch as long as the chunk reads
  // each block once per chunk; the scratch grows with it (the plan's
  // chunk_sub_batch). The head and the routed experts keep max_batch() rows.
  // Results do not depend on it.
  void set_chunk_sub_batch(size_t rows) { chunk_sub_batch_ = rows; }
  // Rows of a sub-batch whose AttnRes block states are mixed at a time (and,
  // spilled, staged from the file): kChunkPieceRows, as the plan counts; a
  // test sets fewer to run many pieces on a small model.
  void set_chunk_piece_rows(size_t rows) { chunk_piece_rows_ = std::max<size_t>(1, rows); }
  // Tokens one read of the weights covers in forward().
  size_t tokens_per_read() const { return std::max(chunk_, max_batch_); }
  // The chunk's block states go to this file instead of memory (the plan
  // spills them where a useful chunk does not fit otherwise; results do not
  // depend on it). nullptr: in memory.
  void set_spill(std::unique_ptr<SpillFile> file) { spill_ = std::move(file); }
  const SpillFile* spill() const { return spill_.get(); }
  // While a chunk runs, every layer's state of its sequences but the running
  // layer's is in this file (model/state_loan.h: the plan lends it where a
  // chunk does not fit otherwise; results do not depend on it), and the
  // chunk's memory is freed after each chunk. nullptr: in memory.
  void set_state_loan(std::unique_ptr<SpillFile> file) { state_file_ = std::move(file); }
  const SpillFile* state_loan_file() const { return state_file_.get(); }

  // Called after every layer of every batch of a forward() call (after
  // every sub-batch of a layer of a chunk) with the steps done and the
  // total, for progress reports on long prompts.
  using Progress = std::function<void(int64_t done, int64_t total)>;
  void set_progress(Progress progress) { progress_ = std::move(progress); }

  // Polled after every layer of every pass: when `stop` returns true the
  // pass ends there and forward()/forward_sequences() throw
  // Error(kInterrupted), so Ctrl-C takes effect within about a layer instead
  // of a whole weight pass. With `restore`, the sequences are first put back
  // as they were before that pass (each KDA layer's state is copied before
  // the layer runs, so one more KDA state per sequence is held; MLA caches
  // are cut back), and remain usable; batches of a longer forward() that
  // finished before it stay evaluated. Without, they are left part-way and
  // must not be used again. nullptr: passes always run to the end.
  void set_stop(std::function<bool()> stop, bool restore) {
    stop_ = std::move(stop);
    restore_on_stop_ = restore;
  }

  // The layer tap, or nullptr (the default: a pass then only tests a null
  // pointer per layer). It must outlive the passes it is set for.
  void set_layer_tap(LayerTap* tap) { tap_ = tap; }

  // Where a chunk's batched matrix products run (forward_chunk): a device
  // (lib/gpu) with the CPU kernels' bits, or nullptr (the default: the
  // CPU). Batches of max_batch() or fewer rows, decode included, stay on
  // the CPU. It must outlive the passes it is set for.
  void set_compute_backend(kernels::ComputeBackend* backend) { compute_backend_ = backend; }

  // The scratch memory every pass reuses (grown only for a pass with more
  // rows or a longer context than any before).
  const ForwardScratch& scratch() const { return scratch_; }
  ForwardScratch& scratch() { return scratch_; }

 private:
  // forward_sequences() with the head rows `rows` (kAll or kLastOfEach).
  void run_sequences(std::span<SequenceState* const> states, std::span<const std::span<const int32_t>> ids,
                     LogitRows rows, float* logits, std::span<RowHistory* const> histories,
                     std::span<StateCapture> captures = {});
  // One pass over consecutive rows of the given sequences (counts[i] rows of
  // states[i], ids concatenated in that order).
  void forward_batch(std::span<SequenceState* const> states, std::span<const size_t> counts, const int32_t* ids,
                     LogitRows rows, float* logits, std::span<RowHistory* const> histories, int64_t steps_before,
                     int64_t steps_total);

  // A chunk of more than max_batch_ rows, counts[k] consecutive rows of
  // states[k] (one prompt, or a server's prompt chunks and decode rows),
  // layer-major (forward_pass_chunk.cpp); same effect on the states as
  // forward_batch. `captures` (kLastOfEach only): states taken inside it.
  void forward_chunk(std::span<SequenceState* const> states, std::span<const size_t> counts, const int32_t* ids,
                     LogitRows rows, float* logits, int64_t steps_before, int64_t steps_total,
                     std::span<StateCapture> captures = {});
  struct ChunkRun;  // one forward_chunk call (forward_pass_chunk.cpp)
  // Layer i over every row of the chunk.
  void chunk_layer(ChunkRun& run, int i);
  // The head over the chunk's wanted rows (kLast, kAll or kLastOfEach, and
  // the captures' rows).
  void chunk_head(ChunkRun& run, LogitRows rows, float* logits);
  // The head over the chunk's rows `rows` (any order), into out[t] [vocab]
  // each, in pieces of at most a batch; positions name them in errors.
  void chunk_head_rows(ChunkRun& run, const std::vector<size_t>& rows, const std::vector<int64_t>& positions,
                       const std::vector<float*>& out);
  // Restores the sequences after a stop in layer `layer` (see set_stop;
  // `undo`: from undo_, else they are already put back) and throws
  // Error(kInterrupted).
  [[noreturn]] void stop_pass(std::span<SequenceState* const> states, std::span<const int64_t> pos0, int layer,
                              bool within, bool undo = true);
  // stop_pass for a chunk: a lent state is put back from its file.
  [[noreturn]] void stop_chunk(ChunkRun& run, int layer, bool within);
  // The output AttnRes mix, final norm and lm_head over m rows: blocks (B,
  // each [m, hidden]) and p_rows [m, hidden] -> logits [m, vocab].
  void head_logits(const std::vector<const float*>& blocks, const float* p_rows, size_t m, float* logits);
  // The same, the mix written into x [m, hidden] by `mix` with the head's
  // AttnRes weights (a chunk's reads the blocks its device keeps).
  void head_logits(size_t m, float* logits, const std::function<void(const HeadWeights& head, float* x)>& mix);

  ModelConfig config_;
  WeightSource& source_;
  ThreadPool& pool_;
  size_t max_batch_ = 256;
  size_t chunk_ = 0;
  size_t chunk_sub_batch_ = 0;
  size_t chunk_piece_rows_ = kChunkPieceRows;
  kernels::ComputeBackend* compute_backend_ = nullptr;
  PrefillChunk chunk_state_;
  std::unique_ptr<SpillFile> spill_;
  std::unique_ptr<SpillFile> state_file_;  // set_state_loan
  Progress progress_;
  std::function<bool()> stop_;
  bool restore_on_stop_ = false;
  std::vector<std::vector<KdaState>> undo_;  // [sequence][KDA layer]: states before the pass, buffers reused
  LayerTap* tap_ = nullptr;
  ForwardScratch scratch_;
};

}  // namespace k3
