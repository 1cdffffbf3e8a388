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
// same rows.
#include <algorithm>
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
    chunk_ = PrefillChunk{};
    scratch_.release_rows();
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
                                int64_t steps_total) {
  const kernels::ScopedComputeBackend products_on(compute_backend_);  // the chunk's products: set_compute_backend
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
  run.sub = std::min(run.n, std::max(max_batch_, chunk_sub_batch_));
  run.subs = static_cast<int64_t>((run.n + run.sub - 1) / run.sub);
  const ChunkLoan loan(source_, chunk_state_, scratch_);  // before the chunk's memory is taken
  reserve_chunk_scratch(scratch_, c, max_batch_, run.sub, positions, pool_.size());
  chunk_state_.reserve(c, run.n, std::min(run.sub, chunk_piece_rows_), spill_.get());
  run.P = chunk_state_.p.data();
  run.blocks = &chunk_state_.blocks;
  source_.embed(ids, run.n, run.P);
  run.require_rows_finite("the embedding rows");
  run.s = &scratch_.begin_chunk_pass(c, run.sub, chunk_state_.blocks);
  if (stop_ && restore_on_stop_) {
    undo_.resize(states.size());
    for (auto& u : undo_) u.resize(static_cast<size_t>(c.num_hidden_layers));
  }
  for (int i = 0; i < c.num_hidden_layers; ++i) chunk_layer(run, i);
  if (rows != LogitRows::kNone) chunk_head(run, rows, logits);
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
  if (stop_ && restore_on_stop_ && c.is_kda_layer(i))
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
  for (size_t r0 = 0; r0 < n; r0 += sub) {
    const size_t m = std::min(sub, n - r0);
    run.view(r0, m, before);
    decoder_layer_attention(
        c, i, w, source_, run.segments_of(i, r0, m), s, [&] { ++s.chunk_block_count; }, scratch_, &pool_);
    if (moe) {
      moe_chunk_prepare(c, w.moe, scratch_.x(), m, r0, chunk_state_.moe, &pool_, scratch_);
    } else {
      const size_t inter = out_dim(w.mlp.gate_proj), piece = run.blocks->piece_rows();
      situ_mlp_chunk(w.mlp, SituParams::from(c), scratch_.x(), m, scratch_.a(), &pool_,
                     scratch_.op_floats(situ_chunk_scratch_floats(m, inter, piece)), piece);
      decoder_layer_add(c, s, scratch_.a());
    }
    if (r0 + m == n) break;
    // Progress per sub-batch (the last after the layer is done), so a
    // progress callback that throws on Ctrl-C stops within a layer too.
    const int64_t step = run.steps_before + i * run.subs + static_cast<int64_t>(r0 / sub) + 1;
    try {
      if (progress_) progress_(step, run.steps_total);
    } catch (...) {  // abandoned (Ctrl-C): the layer's weights go back
      source_.release_layer(i);
      throw;
    }
    if (stop_ && stop_()) {
      source_.release_layer(i);
      stop_pass(run.states, run.pos0, i, true);
    }
  }
  if (moe) {
    // Each expert's rows in pieces of the sub-batch, not of one prefill
    // batch: the plan may lower the batch to a few tokens to keep the chunk
    // whole, and an expert's weights would then go through memory once per
    // few rows. The sub-batch's op area already holds these pieces
    // (prefill_sub_batch_op_floats); a row's bits do not depend on them.
    moe_chunk_experts(c, i, source_, n, sub, chunk_state_.moe, &pool_, scratch_);
    for (size_t r0 = 0; r0 < n; r0 += sub) {
      const size_t m = std::min(sub, n - r0);
      run.view(r0, m, 0);
      moe_chunk_combine(c, w.moe, m, r0, chunk_state_.moe, scratch_.a(), &pool_, scratch_);
      decoder_layer_add(c, s, scratch_.a());
    }
  }
  source_.release_layer(i);
  run.require_rows_finite("the output of layer " + std::to_string(i));
  if (tap_ && tap_->wants(i))
    for (size_t k = 0; k < run.states.size(); ++k)
      tap_->on_layer(i, *run.states[k], run.pos0[k], run.P + run.begin[k] * run.hidden, run.counts[k]);
  if (progress_) progress_(run.steps_before + (i + 1) * run.subs, run.steps_total);
  if (stop_ && i + 1 < c.num_hidden_layers && stop_()) stop_pass(run.states, run.pos0, i, false);
}

void ForwardPass::chunk_head(ChunkRun& run, LogitRows rows, float* logits) {
  ChunkBlocks& blocks = *run.blocks;
  // The logits of a batch at a time (spilled, of at most the block states'
  // staged piece).
  const size_t vocab = config_.vocab_size, hidden = run.hidden,
               sub = blocks.spilled() ? std::min(max_batch_, blocks.piece_rows()) : max_batch_;
  const size_t count = blocks.count();
  blocks.unstage();
  if (rows == LogitRows::kLastOfEach) {
    // The last row of each sequence, each mixed on its own into the head's
    // contiguous rows (a row's mix and norm do not depend on the other rows:
    // no bit changes), so each reads the blocks the device keeps; in pieces
    // of at most a batch.
    const size_t seqs = run.states.size();
    for (size_t k0 = 0; k0 < seqs; k0 += max_batch_) {
      const size_t m = std::min(max_batch_, seqs - k0);
      float* out = logits + k0 * vocab;
      head_logits(m, out, [&](const HeadWeights& head, float* mixed) {
        for (size_t t = 0; t < m; ++t) {
          const size_t row = run.begin[k0 + t] + run.counts[k0 + t] - 1;
          blocks.mix(row, 1, count, run.P + row * hidden, head.output_attn_res_proj.data,
                     head.output_attn_res_norm.data, config_.rms_norm_eps, mixed + t * hidden, scratch_.mix());
        }
      });
      for (size_t t = 0; t < m; ++t)
        require_finite(out + t * vocab, vocab, vocab, run.pos0[k0 + t] + static_cast<int64_t>(run.counts[k0 + t]) - 1,
                       "the logits (the head)");
    }
    return;
  }
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

}  // namespace k3
