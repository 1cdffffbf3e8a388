#include "draft/dspark_drafts.h"

#include <algorithm>

#include "common/error.h"

namespace k3 {

DSparkDrafts::DSparkDrafts(const DSparkModel& model, WeightSource& target, ThreadPool* pool, VerifyPolicy policy)
    : model_(model), target_(target), pool_(pool), policy_(std::move(policy)) {
  slots_ = model.config().target_layer_ids;
  first_layer_ = *std::min_element(slots_.begin(), slots_.end());
  last_layer_ = *std::max_element(slots_.begin(), slots_.end());
}

DSparkDrafts::~DSparkDrafts() {
  try {
    flush();
  } catch (...) {  // a log that cannot be written at exit has already been reported by its writer
  }
}

bool DSparkDrafts::wants(int layer) const { return std::find(slots_.begin(), slots_.end(), layer) != slots_.end(); }

void DSparkDrafts::on_layer(int layer, const SequenceState& state, int64_t pos0, const float* rows, size_t n) {
  if (detached_ || (sequence_ && &state != sequence_)) return;
  const size_t hidden = model_.config().hidden_size, taps = slots_.size(), row = taps * hidden;
  if (layer == first_layer_) {  // a pass begins: it rewrites positions pos0 on
    if (pos0 < context_.positions) context_.truncate(model_.config(), pos0);
    if (pos0 < taps_begin_ || pos0 > taps_end_) {
      // Before the kept taps (a rewind) or after a gap (positions never
      // seen): keep only this pass's.
      taps_.clear();
      taps_begin_ = pos0;
    }
    taps_end_ = pos0;
    taps_.resize(static_cast<size_t>(pos0 + static_cast<int64_t>(n) - taps_begin_) * row);
  }
  const size_t first = static_cast<size_t>(pos0 - taps_begin_);
  for (size_t s = 0; s < taps; ++s)
    if (slots_[s] == layer)
      for (size_t t = 0; t < n; ++t)
        std::copy_n(rows + t * hidden, hidden, taps_.data() + (first + t) * row + s * hidden);
  if (layer == last_layer_) {
    taps_end_ = pos0 + static_cast<int64_t>(n);
    // More rows than a verification has: a prefill, committed as it stands.
    if (!keep_taps_ && n > static_cast<size_t>(model_.config().block_size) + 1) fuse_until(taps_end_);
  }
}

void DSparkDrafts::reset() {
  flush();
  context_.truncate(model_.config(), 0);
  taps_.clear();
  taps_begin_ = taps_end_ = 0;
}

bool DSparkDrafts::fuse_until(int64_t end) {
  if (end <= context_.positions) {
    context_.truncate(model_.config(), end);
    return true;
  }
  if (context_.positions < taps_begin_ || end > taps_end_) return false;
  const size_t row = slots_.size() * static_cast<size_t>(model_.config().hidden_size);
  const size_t offset = static_cast<size_t>(context_.positions - taps_begin_);
  const size_t n = static_cast<size_t>(end - context_.positions);
  model_.fuse(taps_.data() + offset * row, n, context_, pool_);
  stats_.positions_fused += static_cast<int64_t>(n);
  if (!keep_taps_) {
    taps_.erase(taps_.begin(), taps_.begin() + static_cast<ptrdiff_t>((offset + n) * row));
    taps_begin_ = end;
  }
  return true;
}

std::vector<int32_t> DSparkDrafts::propose(std::span<const int32_t> context, size_t max) {
  flush();
  if (context.empty() || max == 0) return {};
  const int64_t L = static_cast<int64_t>(context.size()) - 1;
  const int32_t anchor = context.back();
  if (!policy_.drafts_at(L)) {
    ++stats_.skipped_long_context;
    return {};
  }
  if (!fuse_until(L)) {
    ++stats_.skipped_no_taps;
    return {};
  }
  const size_t block = static_cast<size_t>(model_.config().block_size);
  DraftPassResult r = model_.propose(target_, context_, anchor, block, pool_);
  ++stats_.passes;
  stats_.proposed += static_cast<int64_t>(block);
  const size_t k = policy_.choose(r.confidence, L, max);
  waiting_ = DraftLogEntry{L, anchor, r.ids, 0, 0};
  if (k == 0) {
    flush();
    return {};
  }
  return std::vector<int32_t>(r.ids.begin(), r.ids.begin() + static_cast<ptrdiff_t>(k));
}

void DSparkDrafts::verified(size_t proposed, size_t accepted) {
  if (!waiting_) return;
  waiting_->verified = proposed;
  waiting_->accepted = accepted;
  stats_.verified += static_cast<int64_t>(proposed);
  stats_.accepted += static_cast<int64_t>(accepted);
  policy_.record(proposed, accepted);
  flush();
}

DraftPassResult DSparkDrafts::draft_at(int64_t pos, int32_t anchor) {
  flush();
  if (!fuse_until(pos))
    throw Error(ExitCode::kInternal, "draft at position " + std::to_string(pos) + " without the taps before it");
  const size_t block = static_cast<size_t>(model_.config().block_size);
  DraftPassResult r = model_.propose(target_, context_, anchor, block, pool_);
  ++stats_.passes;
  stats_.proposed += static_cast<int64_t>(block);
  waiting_ = DraftLogEntry{pos, anchor, r.ids, 0, 0};
  flush();
  return r;
}

void DSparkDrafts::flush() {
  if (!waiting_) return;
  DraftLogEntry e = std::move(*waiting_);
  waiting_.reset();
  if (log_) log_(e);
}

}  // namespace k3
