// ForwardPass::forward_chunk: the layer-major prefill of one chunk of a prompt
// (ForwardPass::set_chunk). Layer by layer, the chunk's rows go through the
// attention half in sub-batches (set_chunk_sub_batch, at least max_batch()
// rows: a trunk streamed in row blocks is read once per sub-batch) that
// reuse the pass's scratch; a dense layer's MLP follows each sub-batch, while a MoE layer
// routes every sub-batch first, then requests each expert any row chose
// once and computes it for all those rows, then combines per sub-batch. The
// trunk weights of a layer are acquired once for the chunk. Every value is
// per token, and sub-batches of a sequence run in order (KDA's recurrence,
// MLA's cache), so the bits are those of forward_batch over the same rows.
#include <algorithm>
#include <string>
#include <vector>

#include "common/thread_pool.h"
#include "kernels/matmul_backend.h"
#include "model/decoder_layer.h"
#include "model/finite_check.h"
#include "model/forward_pass.h"
#include "model/latent_moe_chunk.h"
#include "model/linear.h"
#include "model/situ_mlp.h"

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

}  // namespace

void ForwardPass::forward_chunk(SequenceState& state, const int32_t* ids, size_t n, LogitRows rows, float* logits,
                                int64_t steps_before, int64_t steps_total) {
  const kernels::ScopedMatmulBackend products_on(matmul_backend_);  // the chunk's products: set_matmul_backend
  const ModelConfig& c = config_;
  const size_t hidden = c.hidden_size, sub = std::min(n, std::max(max_batch_, chunk_sub_batch_));
  const int64_t pos0 = state.positions;
  reserve_chunk_scratch(scratch_, c, max_batch_, sub, pos0 + static_cast<int64_t>(n), pool_.size());
  chunk_state_.reserve(c, n, sub, spill_.get());
  float* P = chunk_state_.p.data();  // [n, hidden]: the running sum p of every row of the chunk
  source_.embed(ids, n, P);
  require_finite(P, n * hidden, hidden, pos0, "the embedding rows");

  ChunkBlocks& blocks = chunk_state_.blocks;  // B, each [n, hidden] (in memory or spilled)
  ResidualStream& s = scratch_.begin_pass(c, sub);
  // A sub-batch's view of the chunk: rows [r0, r0 + m) of p and of the
  // first `count` block states (returns all `staged` blocks' rows).
  auto view = [&](size_t r0, size_t m, size_t count, size_t staged) -> const std::vector<const float*>& {
    s.n = m;
    s.p = P + r0 * hidden;
    s.p_none = false;
    const std::vector<const float*>& b = blocks.rows(r0, m, staged);
    s.blocks.assign(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(count));
    return b;
  };
  SequenceState* const one[] = {&state};
  const int64_t pos0s[] = {pos0};
  const bool restorable = stop_ && restore_on_stop_;
  if (restorable) {
    undo_.resize(1);
    undo_[0].resize(static_cast<size_t>(c.num_hidden_layers));
  }
  for (int i = 0; i < c.num_hidden_layers; ++i) {
    if (restorable && c.is_kda_layer(i)) undo_[0][i] = state.layers[i].kda;
    const LayerWeights& w = source_.acquire_layer(i);
    const size_t before = blocks.count();
    // A block boundary: every row's p becomes a block state before any
    // sub-batch updates p.
    if (i % c.attn_res_block_size == 0) blocks.open(P);
    const bool moe = c.is_moe_layer(i);
    const int64_t subs = static_cast<int64_t>((n + sub - 1) / sub);
    for (size_t r0 = 0; r0 < n; r0 += sub) {
      const size_t m = std::min(sub, n - r0);
      const std::vector<const float*>& b = view(r0, m, before, blocks.count());
      const LayerSegment seg{&state.layers[i], 0, m, nullptr};
      decoder_layer_attention(
          c, i, w, source_, std::span<const LayerSegment>(&seg, 1), s, [&] { s.blocks.push_back(b[before]); }, scratch_,
          &pool_);
      if (moe) {
        moe_chunk_prepare(c, w.moe, scratch_.x(), m, r0, chunk_state_.moe, &pool_, scratch_);
      } else {
        const size_t inter = out_dim(w.mlp.gate_proj);
        situ_mlp(w.mlp, SituParams::from(c), scratch_.x(), m, scratch_.a(), &pool_,
                 scratch_.op_floats(situ_scratch_floats(m, inter)));
        decoder_layer_add(c, s, scratch_.a());
      }
      // Progress per sub-batch (the last after the layer is done), so a
      // progress callback that throws on Ctrl-C stops within a layer too.
      const int64_t step = steps_before + i * subs + static_cast<int64_t>(r0 / sub) + 1;
      if (progress_ && r0 + m < n) {
        try {
          progress_(step, steps_total);
        } catch (...) {  // abandoned (Ctrl-C): the layer's weights go back
          source_.release_layer(i);
          throw;
        }
      }
      if (stop_ && r0 + m < n && stop_()) {
        source_.release_layer(i);
        stop_pass(one, pos0s, i, true);
      }
    }
    if (moe) {
      moe_chunk_experts(c, i, source_, n, max_batch_, chunk_state_.moe, &pool_, scratch_);
      for (size_t r0 = 0; r0 < n; r0 += sub) {
        const size_t m = std::min(sub, n - r0);
        view(r0, m, 0, 0);
        moe_chunk_combine(c, w.moe, m, r0, chunk_state_.moe, scratch_.a(), &pool_, scratch_);
        decoder_layer_add(c, s, scratch_.a());
      }
    }
    source_.release_layer(i);
    require_finite(P, n * hidden, hidden, pos0, "the output of layer " + std::to_string(i));
    if (tap_ && tap_->wants(i)) tap_->on_layer(i, state, pos0, P, n);
    if (progress_) progress_(steps_before + (i + 1) * subs, steps_total);
    if (stop_ && i + 1 < c.num_hidden_layers && stop_()) stop_pass(one, pos0s, i, false);
  }

  if (rows != LogitRows::kNone) {
    // The head over the wanted rows (the last, or all in sub-batches).
    const size_t vocab = c.vocab_size;
    const size_t first = rows == LogitRows::kLast ? n - 1 : 0;
    for (size_t r0 = first; r0 < n; r0 += max_batch_) {  // the logits of a batch at a time
      const size_t m = std::min(max_batch_, n - r0);
      const std::vector<const float*>& b = blocks.rows(r0, m, blocks.count());
      float* out = logits + (r0 - first) * vocab;
      head_logits(b, P + r0 * hidden, m, out);
      require_finite(out, m * vocab, vocab, pos0 + static_cast<int64_t>(r0), "the logits (the head)");
    }
  }
  state.positions += static_cast<int64_t>(n);
  state.tokens.insert(state.tokens.end(), ids, ids + n);
}

}  // namespace k3
