#include "model/forward_pass.h"

#include <algorithm>
#include <vector>

#include "common/error.h"
#include "common/thread_pool.h"
#include "kernels/attn_res.h"
#include "kernels/rms_norm.h"
#include "model/decoder_layer.h"
#include "model/finite_check.h"
#include "model/kda.h"
#include "model/linear.h"
#include "model/mla.h"

namespace k3 {

void check_token_ids(const ModelConfig& c, std::span<const int32_t> ids) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= c.vocab_size)
      throw Error(ExitCode::kBadInput, "token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                                           " is outside the vocabulary 0.." + std::to_string(c.vocab_size - 1));
}

ForwardPass::ForwardPass(const ModelConfig& config, WeightSource& source, ThreadPool& pool)
    : config_(config), source_(source), pool_(pool) {}

void ForwardPass::reset(SequenceState& state) const {
  state.positions = 0;
  state.tokens.clear();
  state.layers.assign(config_.num_hidden_layers, LayerState{});
  for (int i = 0; i < config_.num_hidden_layers; ++i)
    if (config_.is_kda_layer(i)) kda_reset(config_, state.layers[i].kda);
}

void ForwardPass::forward(SequenceState& state, std::span<const int32_t> ids, LogitRows rows, float* logits,
                          std::span<StateCapture> captures) {
  check_token_ids(config_, ids);
  for (const StateCapture& cap : captures)
    if (cap.sequence != 0 || cap.rows == 0 || cap.rows > ids.size())
      throw Error(ExitCode::kInternal, "forward: a capture outside the ids");
  if (state.layers.size() != static_cast<size_t>(config_.num_hidden_layers))
    throw Error(ExitCode::kInternal, "sequence state was not reset for this model");
  const size_t vocab = config_.vocab_size;
  const size_t per_read = tokens_per_read();
  // Progress steps: a layer of a batch, or a sub-batch of a layer of a chunk.
  auto steps_of = [&](size_t n) {
    const size_t sub = n > max_batch_ ? std::min(n, std::max(max_batch_, chunk_sub_batch_)) : n;  // forward_chunk's
    const size_t subs = (n + sub - 1) / sub;
    return static_cast<int64_t>(subs) * config_.num_hidden_layers;
  };
  int64_t steps_total = 0;
  for (size_t begin = 0; begin < ids.size(); begin += per_read)
    steps_total += steps_of(std::min(per_read, ids.size() - begin));
  int64_t steps_before = 0;
  for (size_t begin = 0; begin < ids.size(); begin += per_read, steps_before += steps_of(per_read)) {
    const size_t n = std::min(per_read, ids.size() - begin);
    const bool last_read = begin + n == ids.size();
    LogitRows read_rows = rows;
    if (rows == LogitRows::kLast && !last_read) read_rows = LogitRows::kNone;
    float* out = rows == LogitRows::kAll ? logits + begin * vocab : logits;  // [n, vocab] (kAll) or [vocab]
    SequenceState* one = &state;
    const std::span<SequenceState* const> states(&one, 1);
    const std::span<const size_t> counts(&n, 1);
    // The captures within this read, their rows counted from its first id.
    std::vector<StateCapture> here;
    for (StateCapture& cap : captures)
      if (cap.rows > begin && cap.rows <= begin + n) here.push_back({0, cap.rows - begin, {}, {}});
    if (n > max_batch_ || !here.empty())
      forward_chunk(states, counts, ids.data() + begin, read_rows, out, steps_before, steps_total, here);
    else forward_batch(states, counts, ids.data() + begin, read_rows, out, {}, steps_before, steps_total);
    auto taken = here.begin();
    for (StateCapture& cap : captures)
      if (cap.rows > begin && cap.rows <= begin + n) {
        cap.state = std::move(taken->state);
        cap.logits = std::move(taken->logits);
        ++taken;
      }
  }
}

void ForwardPass::forward_sequences(std::span<SequenceState* const> states,
                                    std::span<const std::span<const int32_t>> ids, float* logits,
                                    std::span<RowHistory* const> histories) {
  if (!histories.empty() && histories.size() != states.size())
    throw Error(ExitCode::kInternal, "forward_sequences: one history per sequence");
  run_sequences(states, ids, LogitRows::kAll, logits, histories);
}

void ForwardPass::forward_sequences_last(std::span<SequenceState* const> states,
                                         std::span<const std::span<const int32_t>> ids, float* logits,
                                         std::span<StateCapture> captures) {
  run_sequences(states, ids, LogitRows::kLastOfEach, logits, {}, captures);
}

void ForwardPass::run_sequences(std::span<SequenceState* const> states, std::span<const std::span<const int32_t>> ids,
                                LogitRows rows, float* logits, std::span<RowHistory* const> histories,
                                std::span<StateCapture> captures) {
  if (ids.size() != states.size())
    throw Error(ExitCode::kInternal, "forward_sequences: one id list (and history) per sequence");
  std::vector<int32_t> all;
  std::vector<size_t> counts;
  for (size_t i = 0; i < states.size(); ++i) {
    check_token_ids(config_, ids[i]);
    if (states[i]->layers.size() != static_cast<size_t>(config_.num_hidden_layers))
      throw Error(ExitCode::kInternal, "sequence state was not reset for this model");
    if (ids[i].empty()) throw Error(ExitCode::kInternal, "forward_sequences: a sequence without rows");
    all.insert(all.end(), ids[i].begin(), ids[i].end());
    counts.push_back(ids[i].size());
  }
  // More rows than a batch, within a chunk: layer-major, each layer's
  // weights read once for every sequence's rows (a server's long prompt
  // with the other sequences' decode rows riding along).
  const size_t n = all.size();
  for (const StateCapture& cap : captures)
    if (cap.sequence >= counts.size() || cap.rows == 0 || cap.rows > counts[cap.sequence] || n > tokens_per_read())
      throw Error(ExitCode::kInternal, "forward_sequences: a capture outside its sequence's rows or a pass too long");
  // A pass that captures states runs as a chunk, however short: only a
  // chunk's rows can be cut within a layer.
  if ((n > max_batch_ || !captures.empty()) && n <= tokens_per_read() && histories.empty()) {
    const int64_t subs = static_cast<int64_t>((n + max_batch_ - 1) / max_batch_);
    forward_chunk(states, counts, all.data(), rows, logits, 0, subs * config_.num_hidden_layers, captures);
    return;
  }
  forward_batch(states, counts, all.data(), rows, logits, histories, 0, config_.num_hidden_layers);
}

void ForwardPass::rollback(SequenceState& state, const RowHistory& history, size_t keep) const {
  if (history.layers.size() != state.layers.size())
    throw Error(ExitCode::kInternal, "rollback: the history is not of this sequence");
  const size_t rows = history.rows;
  if (keep == 0 || keep > rows || static_cast<int64_t>(rows) > state.positions)
    throw Error(ExitCode::kInternal, "rollback outside the recorded rows");
  const int64_t positions = state.positions - static_cast<int64_t>(rows - keep);
  for (int i = 0; i < config_.num_hidden_layers; ++i) {
    if (config_.is_kda_layer(i)) kda_rollback(config_, history.layers[i], keep, state.layers[i].kda);
    else mla_truncate(config_, state.layers[i].mla, positions);
  }
  state.positions = positions;
  state.tokens.resize(static_cast<size_t>(positions));
}

void ForwardPass::forward_batch(std::span<SequenceState* const> states, std::span<const size_t> counts,
                                const int32_t* ids, LogitRows rows, float* logits,
                                std::span<RowHistory* const> histories, int64_t steps_before, int64_t steps_total) {
  const ModelConfig& c = config_;
  const size_t hidden = c.hidden_size;
  size_t n = 0;
  for (size_t k : counts) n += k;
  for (size_t k = 0; k < histories.size(); ++k)
    if (histories[k]) {
      histories[k]->rows = counts[k];
      histories[k]->layers.resize(c.num_hidden_layers);
    }

  // Scratch for the pass, grown only when this pass has more rows (or a
  // longer context) than any before.
  int64_t positions = 0;
  for (size_t k = 0; k < states.size(); ++k)
    positions = std::max(positions, states[k]->positions + static_cast<int64_t>(counts[k]));
  scratch_.reserve(c, n, positions, static_cast<size_t>(pool_.size()));
  ResidualStream& stream = scratch_.begin_pass(c, n);  // p [n, hidden], blocks each [n, hidden]
  source_.embed(ids, n, stream.p);
  // Non-finite values are caught where they first appear (finite_check.h),
  // each sequence's rows named by their own positions.
  std::vector<int64_t> pos0;  // [sequences]: each one's first position in this pass
  for (SequenceState* st : states) pos0.push_back(st->positions);
  auto require_rows_finite = [&](const std::string& where) {
    size_t begin = 0;
    for (size_t k = 0; k < states.size(); ++k) {
      require_finite(stream.p + begin * hidden, counts[k] * hidden, hidden, pos0[k], where);
      begin += counts[k];
    }
  };
  require_rows_finite("the embedding rows");

  std::vector<LayerSegment> segments;  // [sequences]: each one's rows of the pass
  segments.reserve(states.size());
  // Stopping part-way with restore: each KDA layer's state is copied just
  // before the layer runs (into buffers kept from pass to pass), so the
  // layers already run can be put back; MLA caches only grew and are cut.
  const bool restorable = stop_ && restore_on_stop_;
  if (restorable) {
    undo_.resize(states.size());
    for (auto& u : undo_) u.resize(static_cast<size_t>(c.num_hidden_layers));
  }
  for (int i = 0; i < c.num_hidden_layers; ++i) {
    if (restorable && c.is_kda_layer(i))
      for (size_t k = 0; k < states.size(); ++k) undo_[k][i] = states[k]->layers[i].kda;
    const LayerWeights& w = source_.acquire_layer(i);
    segments.clear();
    size_t begin = 0;
    for (size_t k = 0; k < states.size(); ++k) {
      RowHistory* h = histories.empty() ? nullptr : histories[k];
      segments.push_back({&states[k]->layers[i], begin, counts[k], h ? &h->layers[i] : nullptr});
      begin += counts[k];
    }
    decoder_layer_forward(c, i, w, source_, segments, scratch_, &pool_);
    source_.release_layer(i);
    require_rows_finite("the output of layer " + std::to_string(i));
    if (tap_ && tap_->wants(i)) {
      size_t row = 0;
      for (size_t k = 0; k < states.size(); ++k) {
        tap_->on_layer(i, *states[k], pos0[k], stream.p + row * hidden, counts[k]);
        row += counts[k];
      }
    }
    if (progress_) progress_(steps_before + i + 1, steps_total);
    if (stop_ && i + 1 < c.num_hidden_layers && stop_()) stop_pass(states, pos0, i, false);
  }

  if (rows != LogitRows::kNone) {
    // Only the rows whose logits are wanted go through the head: a
    // contiguous tail (kAll, kLast), or the last row of each sequence
    // (kLastOfEach), gathered into contiguous rows first (a row's mix and
    // norm do not depend on the other rows, so the copy changes no bit).
    std::vector<size_t> picked;  // rows of the pass, in output order
    std::vector<int64_t> picked_pos;
    if (rows == LogitRows::kLastOfEach) {
      size_t end = 0;
      for (size_t k = 0; k < states.size(); ++k) {
        end += counts[k];
        picked.push_back(end - 1);
        picked_pos.push_back(pos0[k] + static_cast<int64_t>(counts[k]) - 1);
      }
    }
    const size_t first = rows == LogitRows::kLast ? n - 1 : 0;
    const size_t m = picked.empty() ? n - first : picked.size();
    std::vector<const float*> blocks;                 // B, each [m, hidden]
    const float* p_rows = stream.p + first * hidden;  // [m, hidden]
    std::vector<float> gathered;                      // [(blocks + 1) * m, hidden] when rows are picked
    if (picked.empty()) {
      for (const float* b : stream.blocks) blocks.push_back(b + first * hidden);
    } else {
      gathered.resize((stream.blocks.size() + 1) * m * hidden);
      float* out = gathered.data();  // [m, hidden], one per block state, then p
      for (const float* b : stream.blocks) {
        for (size_t t = 0; t < m; ++t) std::copy_n(b + picked[t] * hidden, hidden, out + t * hidden);
        blocks.push_back(out);
        out += m * hidden;
      }
      for (size_t t = 0; t < m; ++t) std::copy_n(stream.p + picked[t] * hidden, hidden, out + t * hidden);
      p_rows = out;
    }
    head_logits(blocks, p_rows, m, logits);
    const size_t vocab = c.vocab_size;
    if (rows == LogitRows::kLast) {
      require_finite(logits, vocab, vocab, pos0.back() + static_cast<int64_t>(counts.back()) - 1,
                     "the logits (the head)");
    } else if (rows == LogitRows::kLastOfEach) {
      for (size_t t = 0; t < m; ++t)
        require_finite(logits + t * vocab, vocab, vocab, picked_pos[t], "the logits (the head)");
    } else {
      size_t b = 0;
      for (size_t k = 0; k < states.size(); ++k) {
        require_finite(logits + b * vocab, counts[k] * vocab, vocab, pos0[k], "the logits (the head)");
        b += counts[k];
      }
    }
  }

  size_t begin = 0;
  for (size_t k = 0; k < states.size(); ++k) {
    states[k]->positions += static_cast<int64_t>(counts[k]);
    states[k]->tokens.insert(states[k]->tokens.end(), ids + begin, ids + begin + counts[k]);
    begin += counts[k];
  }
}

void ForwardPass::stop_pass(std::span<SequenceState* const> states, std::span<const int64_t> pos0, int i, bool within,
                            bool undo) {
  const ModelConfig& c = config_;
  if (undo && stop_ && restore_on_stop_)
    for (size_t k = 0; k < states.size(); ++k) {
      for (int j = 0; j <= i; ++j) {
        if (c.is_kda_layer(j)) std::swap(states[k]->layers[j].kda, undo_[k][j]);
        else mla_truncate(c, states[k]->layers[j].mla, pos0[k]);
      }
    }
  throw Error(ExitCode::kInterrupted, (within ? "stopped in layer " : "stopped after layer ") + std::to_string(i + 1) +
                                          " of " + std::to_string(c.num_hidden_layers));
}

void ForwardPass::head_logits(const std::vector<const float*>& blocks, const float* p_rows, size_t m, float* logits) {
  head_logits(m, logits, [&](const HeadWeights& head, float* x) {
    kernels::attn_res_mix_on_backend(blocks, p_rows, m, config_.hidden_size, head.output_attn_res_proj.data,
                                     head.output_attn_res_norm.data, config_.rms_norm_eps, x, scratch_.mix());
  });
}

void ForwardPass::head_logits(size_t m, float* logits,
                              const std::function<void(const HeadWeights& head, float* x)>& mix) {
  const ModelConfig& c = config_;
  const size_t hidden = c.hidden_size;
  const HeadWeights& head = source_.acquire_head();
  float* x = scratch_.h();  // [m, hidden]; h is free once the layers are done
  mix(head, x);
  kernels::rms_norm(x, m, hidden, head.norm.data, c.rms_norm_eps, x);
  const size_t vocab = c.vocab_size;
  size_t covered = 0;  // blocks must tile [0, vocab) in order: no logit is left unwritten
  source_.for_each_head_block(head, [&](int64_t first_row, const Bf16Matrix& W) {
    const size_t r0 = static_cast<size_t>(first_row), rows = static_cast<size_t>(W.rows);
    if (r0 != covered || rows == 0 || r0 + rows > vocab || W.cols != static_cast<int64_t>(hidden))
      throw Error(ExitCode::kInternal, "lm_head blocks do not tile the vocabulary");
    covered = r0 + rows;
    if (m == 1 || rows == vocab) {  // the block's logits are contiguous in the output
      lin(W, x, m, logits + r0, &pool_);
      return;
    }
    float* part = scratch_.op_floats(m * rows);  // [m, rows]: this block's logits, scattered below
    lin(W, x, m, part, &pool_);
    for (size_t t = 0; t < m; ++t) std::copy_n(part + t * rows, rows, logits + t * vocab + r0);
  });
  if (covered != vocab) throw Error(ExitCode::kInternal, "lm_head blocks do not cover the vocabulary");
  source_.release_head();
}

}  // namespace k3
