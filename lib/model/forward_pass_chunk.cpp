// ForwardPass::forward_chunk: the layer-major prefill of a chunk of rows
// (ForwardPass::set_chunk): one prompt's chunk, or a server's pass where
// several sequences' prompt chunks and decode rows share the weights
// (forward_sequences with more rows than max_batch()). Layer by layer, the
// chunk's rows go through the attention half in sub-batches
// (set_chunk_sub_batch, at least max_batch() rows: a trunk streamed in row
// blocks is read once per sub-batch) that reuse the pass's scratch (a
// sub-batch may hold rows of several sequences, one segment each); a dense layer's MLP follows each sub-batch,
// while a MoE layer routes every sub-batch first, then requests each expert
// any row chose once and computes it for all those rows, then combines per
// sub-batch. The trunk weights of a layer are acquired once for the chunk.
// Every value is per token, and a sequence's rows run in order (KDA's
// recurrence, MLA's cache), so the bits are those of forward_batch over the
// same rows. A state captured inside the chunk (model/state_capture.h) cuts
// the sub-batch holding its row there, so each KDA layer's state after that
// row can be copied; the MLA caches' first rows are copied after the layer.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "common/thread_pool.h"
#include "kernels/compute_backend.h"
#include "model/decoder_layer.h"
#include "model/finite_check.h"
#include "model/forward_pass.h"
#include "model/latent_moe_chunk.h"
#include "model/linear.h"
#include "model/situ_mlp_chunk.h"
#include "model/state_loan.h"

namespace k3 {
namespace {

// A layer takes the chunk's rows `sub` at a time (set_chunk_sub_batch): the
// op area is taken at once for them (grown op by op, the old and the new
// area would be held together), while the scratch's own stream rows (p, B)
// stay a batch's: the chunk carries them.
void reserve_chunk_scratch(ForwardScratch& scratch, const ModelConfig& c, size_t batch, size_t sub, int64_t end,
                           size_t workers) {
  scratch.reserve(c, batch, end, workers);
  scratch.op_floats(prefill_sub_batch_op_floats(c, sub, end, workers));
}

// The chunk's carried state and the scratch its sub-batches grew, freed
// before memory lent to the chunk goes back (the weight source's loan, the
// sequence state's).
void free_chunk_memory(PrefillChunk& chunk, ForwardScratch& scratch) {
  chunk = PrefillChunk{};
  scratch.release_rows();
}

// Memory the weight source lends the chunk (WeightSource::lend_for_chunk):
// the chunk's carried state and the scratch its sub-batches grew are freed
// before the loan goes back, however the chunk ends, so the two never hold
// memory at once (the plan counts the larger, MemoryPlan::cache_lent_bytes).
class ChunkLoan {
 public:
  ChunkLoan(WeightSource& source, PrefillChunk& chunk, ForwardScratch& scratch)
      : source_(source), chunk_(chunk), scratch_(scratch), lent_(source.lend_for_chunk()) {}
  ~ChunkLoan() {
    if (!lent_) return;
    free_chunk_memory(chunk_, scratch_);
    source_.reclaim_after_chunk();
  }
  ChunkLoan(const ChunkLoan&) = delete;
  ChunkLoan& operator=(const ChunkLoan&) = delete;

 private:
  WeightSource& source_;
  PrefillChunk& chunk_;
  ForwardScratch& scratch_;
  const bool lent_;
};

}  // namespace

// One forward_chunk call: its sequences, where their rows sit in the chunk,
// and the residual stream's view of a sub-batch.
struct ForwardPass::ChunkRun {
  std::span<SequenceState* const> states;
  std::span<const size_t> counts;  // [sequences]: rows of each, consecutive in that order
  std::vector<size_t> begin;       // [sequences]: each one's first row in the chunk
  std::vector<int64_t> pos0;       // [sequences]: each one's first position
  size_t n = 0, sub = 0, hidden = 0;
  int64_t subs = 0, steps_before = 0, steps_total = 0;
  float* P = nullptr;  // [n, hidden]: the running sum p of every row of the chunk
  ChunkBlocks* blocks = nullptr;
  ResidualStream* s = nullptr;
  std::vector<LayerSegment> segments;
  std::span<StateCapture> captures;
  std::vector<size_t> cuts;   // chunk rows each capture's rows end at, ascending
  StateLoan* lent = nullptr;  // the sequences' layer states in a file while the chunk runs (set_state_loan)

  // The rows a layer's attention takes from r0 at once: to the end of r0's
  // sub-batch, or to the next capture's row if sooner (each row's values
  // are its own and a sequence's rows still run in order: a cut changes no
  // bit, it only passes the sub-batch's row blocks once more).
  size_t piece(size_t r0) const {
    size_t end = std::min(n, (r0 / sub + 1) * sub);
    const auto cut = std::upper_bound(cuts.begin(), cuts.end(), r0);
    if (cut != cuts.end()) end = std::min(end, *cut);
    return end - r0;
  }
  // The chunk row a capture's rows end at.
  size_t capture_end(const StateCapture& cap) const { return begin[cap.sequence] + cap.rows; }
  // Sizes the captured states and gives them their positions and tokens.
  void begin_captures(const ModelConfig& c, const int32_t* ids) {
    for (StateCapture& cap : captures) {
      const SequenceState& from = *states[cap.sequence];
      cap.state.positions = from.positions + static_cast<int64_t>(cap.rows);
      cap.state.tokens = from.tokens;
      const int32_t* first = ids + begin[cap.sequence];
      cap.state.tokens.insert(cap.state.tokens.end(), first, first + cap.rows);
      cap.state.layers.assign(static_cast<size_t>(c.num_hidden_layers), LayerState{});
      cap.logits.resize(static_cast<size_t>(c.vocab_size));
      cuts.push_back(capture_end(cap));
    }
    std::sort(cuts.begin(), cuts.end());
  }
  // After the attention of layer `layer` over rows up to `end`: the KDA
  // state of each capture whose rows end there (synced from the device,
  // which keeps it across the layer's pieces).
  void capture_kda(const ModelConfig& c, int layer, size_t end, kernels::ScopedKdaStates& kept) {
    if (!c.is_kda_layer(layer)) return;
    for (StateCapture& cap : captures) {
      if (capture_end(cap) != end) continue;
      KdaState& state = states[cap.sequence]->layers[layer].kda;
      kept.sync(state.S.data());
      cap.state.layers[layer].kda = state;
    }
  }
  // After layer `layer`: each capture's first rows of an MLA layer's cache,
  // into a new cache (a generation of its own).
  void capture_mla(const ModelConfig& c, int layer) {
    if (c.is_kda_layer(layer)) return;
    const size_t width = static_cast<size_t>(c.kv_lora_rank + c.qk_rope_head_dim);
    for (StateCapture& cap : captures) {
      const std::vector<float>& latent = states[cap.sequence]->layers[layer].mla.latent;
      const size_t kept = static_cast<size_t>(cap.state.positions) * width;
      cap.state.layers[layer].mla.latent.assign(latent.begin(), latent.begin() + static_cast<ptrdiff_t>(kept));
    }
  }

  // A sub-batch's view of the chunk: rows [r0, r0 + m) of p and of the
  // first `count` block states (the layer fetches their rows a piece at a
  // time, model/decoder_layer.cpp).
  void view(size_t r0, size_t m, size_t count) {
    s->n = m;
    s->p = P + r0 * hidden;
    s->p_none = false;
    s->chunk_row0 = r0;
    s->chunk_block_count = count;
  }
  // Each sequence's rows within [r0, r0 + m) at layer `layer`, relative to r0.
  std::span<const LayerSegment> segments_of(int layer, size_t r0, size_t m) {
    segments.clear();
    for (size_t k = 0; k < states.size(); ++k) {
      const size_t b = std::max(begin[k], r0), e = std::min(begin[k] + counts[k], r0 + m);
      if (b < e) segments.push_back({&states[k]->layers[layer], b - r0, e - b, nullptr});
    }
    return segments;
  }
  // Non-finite values are caught where they first appear, each sequence's
  // rows named by their own positions.
  void require_rows_finite(const std::string& where) const {
    for (size_t k = 0; k < states.size(); ++k)
      require_finite(P + begin[k] * hidden, counts[k] * hidden, hidden, pos0[k], where);
  }
};

void ForwardPass::forward_chunk(std::span<SequenceState* const> states, std::span<const size_t> counts,
                                const int32_t* ids, LogitRows rows, float* logits, int64_t steps_before,
                                int64_t steps_total, std::span<StateCapture> captures) {
  const ModelConfig& c = config_;
  ChunkRun run;
  run.states = states;
  run.counts = counts;
  run.hidden = c.hidden_size;
  run.steps_before = steps_before;
  run.steps_total = steps_total;
  int64_t positions = 0;
  for (size_t k = 0; k < states.size(); ++k) {
    run.begin.push_back(run.n);
    run.pos0.push_back(states[k]->positions);
    run.n += counts[k];
    positions = std::max(positions, states[k]->positions + static_cast<int64_t>(counts[k]));
  }
  // The chunk's products go to the device (set_compute_backend); a pass of
  // at most a batch of rows that runs as a chunk only to capture a state
  // keeps the caller's choice, as forward_batch would.
  const kernels::ScopedComputeBackend products_on(run.n > max_batch_ ? compute_backend_
                                                                     : kernels::current_compute_backend());
  run.sub = std::min(run.n, std::max(max_batch_, chunk_sub_batch_));
  run.subs = static_cast<int64_t>((run.n + run.sub - 1) / run.sub);
  run.captures = captures;
  run.begin_captures(c, ids);
  const ChunkLoan loan(source_, chunk_state_, scratch_);  // before the chunk's memory is taken
  // After the loan and before the chunk's memory too: the lent states and
  // the chunk never hold memory at once (the state comes back after the
  // chunk's memory is freed). The stop copies are not kept while lent: the
  // file holds the state before the chunk.
  std::optional<StateLoan> lent_state;
  if (state_file_ && run.n > max_batch_) {
    std::vector<std::vector<KdaState>>().swap(undo_);
    lent_state.emplace(c, *state_file_, states, counts, [this] { free_chunk_memory(chunk_state_, scratch_); });
    run.lent = &*lent_state;
  }
  reserve_chunk_scratch(scratch_, c, max_batch_, run.sub, positions, pool_.size());
  chunk_state_.reserve(c, run.n, std::min(run.sub, chunk_piece_rows_), spill_.get());
  run.P = chunk_state_.p.data();
  run.blocks = &chunk_state_.blocks;
  source_.embed(ids, run.n, run.P);
  run.require_rows_finite("the embedding rows");
  run.s = &scratch_.begin_chunk_pass(c, run.sub, chunk_state_.blocks);
  if (stop_ && restore_on_stop_ && !run.lent) {
    undo_.resize(states.size());
    for (auto& u : undo_) u.resize(static_cast<size_t>(c.num_hidden_layers));
  }
  for (int i = 0; i < c.num_hidden_layers; ++i) {
    if (run.lent) run.lent->bring(i);
    chunk_layer(run, i);
    if (run.lent) run.lent->send(i);
  }
  if (rows != LogitRows::kNone || !captures.empty()) chunk_head(run, rows, logits);
  if (run.lent) run.lent->give_back();
  size_t begin = 0;
  for (size_t k = 0; k < states.size(); ++k) {
    states[k]->positions += static_cast<int64_t>(counts[k]);
    states[k]->tokens.insert(states[k]->tokens.end(), ids + begin, ids + begin + counts[k]);
    begin += counts[k];
  }
}

void ForwardPass::chunk_layer(ChunkRun& run, int i) {
  const ModelConfig& c = config_;
  const size_t n = run.n, sub = run.sub;
  if (stop_ && restore_on_stop_ && !run.lent && c.is_kda_layer(i))
    for (size_t k = 0; k < run.states.size(); ++k) undo_[k][i] = run.states[k]->layers[i].kda;
  const LayerWeights& w = source_.acquire_layer(i);
  ChunkBlocks& blocks = *run.blocks;
  ResidualStream& s = *run.s;
  const size_t before = blocks.count();
  // A block boundary: every row's p becomes a block state before any
  // sub-batch updates p.
  if (i % c.attn_res_block_size == 0) blocks.open(run.P);
  blocks.unstage();
  const bool moe = c.is_moe_layer(i);
  // The layer's trunk products keep their weights on the device across the
  // sub-batches (ComputeBackend::begin_layer_weights) until it is released.
  kernels::ScopedLayerWeights kept_weights;
  // So do a KDA layer's states (ComputeBackend::begin_kda_states), copied
  // back to the host after the last piece (or synced for a capture).
  kernels::ScopedKdaStates kda_states;
  for (size_t r0 = 0, m = 0; r0 < n; r0 += m) {
    m = run.piece(r0);
    run.view(r0, m, before);
    decoder_layer_attention(
        c, i, w, source_, run.segments_of(i, r0, m), s, [&] { ++s.chunk_block_count; }, scratch_, &pool_);
    run.capture_kda(c, i, r0 + m, kda_states);
    if (moe) {
      moe_chunk_prepare(c, w.moe, scratch_.x(), m, r0, chunk_state_.moe, &pool_, scratch_);
    } else {
      const size_t inter = out_dim(w.mlp.gate_proj), piece = run.blocks->piece_rows();
      situ_mlp_chunk(w.mlp, SituParams::from(c), scratch_.x(), m, scratch_.a(), &pool_,
                     scratch_.op_floats(situ_chunk_scratch_floats(m, inter, piece)), piece);
      decoder_layer_add(c, s, scratch_.a());
    }
    if (r0 + m == n) break;
    if ((r0 + m) % sub != 0) continue;  // a capture's cut within the sub-batch
    // Progress per sub-batch (the last after the layer is done), so a
    // progress callback that throws on Ctrl-C stops within a layer too.
    const int64_t step = run.steps_before + i * run.subs + static_cast<int64_t>((r0 + m) / sub);
    try {
      if (progress_) progress_(step, run.steps_total);
    } catch (...) {  // abandoned (Ctrl-C): the layer's weights go back
      source_.release_layer(i);
      throw;
    }
    if (stop_ && stop_()) {
      kda_states.end();  // before stop_pass puts the states before the layer back
      source_.release_layer(i);
      stop_chunk(run, i, true);
    }
  }
  kda_states.end();
  if (moe) {
    // Each expert's rows in pieces of the sub-batch, not of one prefill
    // batch: the plan may lower the batch to a few tokens to keep the chunk
    // whole, and an expert's weights would then go through memory once per
    // few rows. The sub-batch's op area already holds these pieces
    // (prefill_sub_batch_op_floats); a row's bits do not depend on them.
    // Not the routed experts: each runs once per chunk on all its rows.
    kept_weights.end();
    moe_chunk_experts(c, i, source_, n, sub, chunk_state_.moe, &pool_, scratch_);
    kept_weights.begin();  // latent_up's, once per sub-batch
    for (size_t r0 = 0; r0 < n; r0 += sub) {
      const size_t m = std::min(sub, n - r0);
      run.view(r0, m, 0);
      moe_chunk_combine(c, w.moe, m, r0, chunk_state_.moe, scratch_.a(), &pool_, scratch_);
      decoder_layer_add(c, s, scratch_.a());
    }
  }
  kept_weights.end();
  source_.release_layer(i);
  run.capture_mla(c, i);
  run.require_rows_finite("the output of layer " + std::to_string(i));
  if (tap_ && tap_->wants(i))
    for (size_t k = 0; k < run.states.size(); ++k)
      tap_->on_layer(i, *run.states[k], run.pos0[k], run.P + run.begin[k] * run.hidden, run.counts[k]);
  if (progress_) progress_(run.steps_before + (i + 1) * run.subs, run.steps_total);
  if (stop_ && i + 1 < c.num_hidden_layers && stop_()) stop_chunk(run, i, false);
}

void ForwardPass::stop_chunk(ChunkRun& run, int i, bool within) {
  if (run.lent) run.lent->put_back_before();  // from the file: no undo_ copies are kept while lent
  stop_pass(run.states, run.pos0, i, within, run.lent == nullptr);
}

void ForwardPass::chunk_head(ChunkRun& run, LogitRows rows, float* logits) {
  ChunkBlocks& blocks = *run.blocks;
  // The logits of a batch at a time (spilled, of at most the block states'
  // staged piece).
  const size_t vocab = config_.vocab_size, hidden = run.hidden,
               sub = blocks.spilled() ? std::min(max_batch_, blocks.piece_rows()) : max_batch_;
  const size_t count = blocks.count();
  blocks.unstage();
  // The last row of each sequence (kLastOfEach) and each capture's row,
  // through the head together.
  std::vector<size_t> picked;
  std::vector<int64_t> positions;
  std::vector<float*> outs;
  if (rows == LogitRows::kLastOfEach)
    for (size_t k = 0; k < run.states.size(); ++k) {
      picked.push_back(run.begin[k] + run.counts[k] - 1);
      positions.push_back(run.pos0[k] + static_cast<int64_t>(run.counts[k]) - 1);
      outs.push_back(logits + k * vocab);
    }
  for (StateCapture& cap : run.captures) {
    picked.push_back(run.capture_end(cap) - 1);
    positions.push_back(cap.state.positions - 1);
    outs.push_back(cap.logits.data());
  }
  if (!picked.empty()) chunk_head_rows(run, picked, positions, outs);
  if (rows == LogitRows::kLastOfEach || rows == LogitRows::kNone) return;
  // The last row, or all, a batch at a time.
  const size_t n = run.n;
  const size_t first = rows == LogitRows::kLast ? n - 1 : 0;
  for (size_t r0 = first; r0 < n; r0 += sub) {
    const size_t m = std::min(sub, n - r0);
    float* out = logits + (r0 - first) * vocab;
    // The blocks the device keeps are read there (ChunkBlocks::mix).
    head_logits(m, out, [&](const HeadWeights& head, float* x) {
      blocks.mix(r0, m, count, run.P + r0 * hidden, head.output_attn_res_proj.data, head.output_attn_res_norm.data,
                 config_.rms_norm_eps, x, scratch_.mix());
    });
    // Named by the position of the row in its own sequence.
    for (size_t t = 0; t < m; ++t) {
      const size_t row = r0 + t;
      size_t k = 0;
      while (row >= run.begin[k] + run.counts[k]) ++k;
      require_finite(out + t * vocab, vocab, vocab, run.pos0[k] + static_cast<int64_t>(row - run.begin[k]),
                     "the logits (the head)");
    }
  }
}

void ForwardPass::chunk_head_rows(ChunkRun& run, const std::vector<size_t>& rows, const std::vector<int64_t>& positions,
                                  const std::vector<float*>& out) {
  ChunkBlocks& blocks = *run.blocks;
  const size_t vocab = config_.vocab_size, hidden = run.hidden, count = blocks.count();
  // Each row mixed on its own into the head's contiguous rows (a row's mix
  // and norm do not depend on the other rows: no bit changes), so each reads
  // the blocks the device keeps (ChunkBlocks::mix); in pieces of at most a
  // batch.
  std::vector<float> logits;
  for (size_t k0 = 0; k0 < rows.size(); k0 += max_batch_) {
    const size_t m = std::min(max_batch_, rows.size() - k0);
    logits.resize(m * vocab);
    head_logits(m, logits.data(), [&](const HeadWeights& head, float* mixed) {
      for (size_t t = 0; t < m; ++t) {
        const size_t row = rows[k0 + t];
        blocks.mix(row, 1, count, run.P + row * hidden, head.output_attn_res_proj.data, head.output_attn_res_norm.data,
                   config_.rms_norm_eps, mixed + t * hidden, scratch_.mix());
      }
    });
    for (size_t t = 0; t < m; ++t) {
      require_finite(logits.data() + t * vocab, vocab, vocab, positions[k0 + t], "the logits (the head)");
      std::copy_n(logits.data() + t * vocab, vocab, out[k0 + t]);
    }
  }
}

}  // namespace k3
