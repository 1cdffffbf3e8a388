#include "model/engine.h"

#include <algorithm>
#include <vector>

#include "common/error.h"
#include "kernels/thread_pool.h"
#include "model/attn_res.h"
#include "model/decoder_layer.h"
#include "model/finite_check.h"
#include "model/kda.h"
#include "model/linear.h"
#include "model/rms_norm.h"

namespace k3 {

void check_token_ids(const ModelConfig& c, std::span<const int32_t> ids) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= c.vocab_size)
      throw Error(ExitCode::kBadInput, "token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                                           " is outside the vocabulary 0.." + std::to_string(c.vocab_size - 1));
}

Engine::Engine(const ModelConfig& config, WeightSource& source, ThreadPool& pool)
    : config_(config), source_(source), pool_(pool) {}

void Engine::reset(SequenceState& state) const {
  state.positions = 0;
  state.tokens.clear();
  state.layers.assign(config_.num_hidden_layers, LayerState{});
  for (int i = 0; i < config_.num_hidden_layers; ++i)
    if (config_.is_kda_layer(i)) kda_reset(config_, state.layers[i].kda);
}

void Engine::forward(SequenceState& state, std::span<const int32_t> ids, LogitRows rows, float* logits) {
  check_token_ids(config_, ids);
  if (state.layers.size() != static_cast<size_t>(config_.num_hidden_layers))
    throw Error(ExitCode::kInternal, "sequence state was not reset for this model");
  const size_t vocab = config_.vocab_size;
  const int64_t batches = static_cast<int64_t>((ids.size() + max_batch_ - 1) / max_batch_);
  const int64_t steps_total = batches * config_.num_hidden_layers;
  for (size_t begin = 0; begin < ids.size(); begin += max_batch_) {
    const size_t n = std::min(max_batch_, ids.size() - begin);
    const bool last_batch = begin + n == ids.size();
    LogitRows batch_rows = rows;
    if (rows == LogitRows::kLast && !last_batch) batch_rows = LogitRows::kNone;
    float* out = rows == LogitRows::kAll ? logits + begin * vocab : logits;
    const int64_t steps_before = static_cast<int64_t>(begin / max_batch_) * config_.num_hidden_layers;
    forward_batch(state, ids.data() + begin, n, batch_rows, out, steps_before, steps_total);
  }
}

void Engine::forward_batch(SequenceState& state, const int32_t* ids, size_t n, LogitRows rows, float* logits,
                           int64_t steps_before, int64_t steps_total) {
  const ModelConfig& c = config_;
  const size_t hidden = c.hidden_size;

  ResidualStream stream;
  stream.n = n;
  stream.p.resize(n * hidden);
  source_.embed(ids, n, stream.p.data());
  // Non-finite values are caught where they first appear (finite_check.h).
  const int64_t pos0 = state.positions;
  require_finite(stream.p.data(), n * hidden, hidden, pos0, "the embedding rows");

  for (int i = 0; i < c.num_hidden_layers; ++i) {
    const LayerWeights& w = source_.acquire_layer(i);
    decoder_layer_forward(c, i, w, source_, state.layers[i], stream, &pool_);
    source_.release_layer(i);
    require_finite(stream.p.data(), n * hidden, hidden, pos0, "the output of layer " + std::to_string(i));
    if (progress_) progress_(steps_before + i + 1, steps_total);
  }

  if (rows != LogitRows::kNone) {
    const HeadWeights& head = source_.acquire_head();
    // Only the rows whose logits are wanted go through the head.
    const size_t first = rows == LogitRows::kLast ? n - 1 : 0;
    const size_t m = n - first;
    std::vector<const float*> blocks;
    for (const auto& b : stream.blocks) blocks.push_back(b.data() + first * hidden);
    std::vector<float> x(m * hidden);
    attn_res_mix(blocks, stream.p.data() + first * hidden, m, hidden, head.output_attn_res_proj,
                 head.output_attn_res_norm, c.rms_norm_eps, x.data());
    rms_norm(x.data(), m, hidden, head.norm.data, c.rms_norm_eps, x.data());
    const size_t vocab = c.vocab_size;
    std::vector<float> part;
    size_t covered = 0;  // blocks must tile [0, vocab) in order: no logit is left unwritten
    source_.for_each_head_block(head, [&](int64_t first_row, const Bf16Matrix& W) {
      const size_t r0 = static_cast<size_t>(first_row), rows = static_cast<size_t>(W.rows);
      if (r0 != covered || rows == 0 || r0 + rows > vocab || W.cols != static_cast<int64_t>(hidden))
        throw Error(ExitCode::kInternal, "lm_head blocks do not tile the vocabulary");
      covered = r0 + rows;
      if (m == 1 || rows == vocab) {  // the block's logits are contiguous in the output
        lin(W, x.data(), m, logits + r0, &pool_);
        return;
      }
      part.resize(m * rows);
      lin(W, x.data(), m, part.data(), &pool_);
      for (size_t t = 0; t < m; ++t) std::copy_n(part.data() + t * rows, rows, logits + t * vocab + r0);
    });
    if (covered != vocab) throw Error(ExitCode::kInternal, "lm_head blocks do not cover the vocabulary");
    source_.release_head();
    require_finite(logits, m * vocab, vocab, pos0 + static_cast<int64_t>(first), "the logits (the head)");
  }

  state.positions += static_cast<int64_t>(n);
  state.tokens.insert(state.tokens.end(), ids, ids + n);
}

}  // namespace k3
