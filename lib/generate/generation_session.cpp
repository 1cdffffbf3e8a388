#include "generate/generation_session.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "common/clock.h"
#include "common/error.h"
#include "state/continuation.h"

namespace k3 {

namespace {

using Clock = std::chrono::steady_clock;

// Weight reads of one forward() call over n ids: one per prefill chunk.
int64_t passes_for(const ForwardPass& engine, size_t n) {
  return static_cast<int64_t>((n + engine.tokens_per_read() - 1) / engine.tokens_per_read());
}

}  // namespace

GenerationSession::GenerationSession(ForwardPass& engine, GenerationOptions options)
    : engine_(engine),
      options_(std::move(options)),
      sampler_(options_.sampling),
      log_(options_.log_logits, static_cast<size_t>(engine.config().vocab_size)) {}

void GenerationSession::reset() {
  engine_.reset(state_);
  pending_.clear();
  row_.clear();
  has_row_ = false;
}

void GenerationSession::restore(ConversationState&& saved) {
  state_ = std::move(saved.sequence);
  pending_ = std::move(saved.pending);
  row_ = std::move(saved.last_logits);
  has_row_ = !row_.empty();
}

void GenerationSession::evaluate(std::span<const int32_t> ids, LogitRows rows, float* out,
                                 std::span<StateCapture> captures) {
  engine_.forward(state_, ids, rows, out, captures);
  counters_.weight_passes += passes_for(engine_, ids.size());
}

void GenerationSession::feed(std::span<const int32_t> ids, std::vector<float>* all_rows,
                             const ForwardPass::Progress& progress) {
  feed_capturing(ids, all_rows, progress, {});
}

GenerationSession::SavePoint GenerationSession::feed_keeping(std::span<const int32_t> ids, size_t keep,
                                                             const ForwardPass::Progress& progress) {
  if (keep == 0 || keep > ids.size())
    throw Error(ExitCode::kInternal, "GenerationSession::feed_keeping: a save point outside the ids");
  const size_t pending = pending_.size(), logged = log_.rows();
  StateCapture cap{0, pending + keep, {}, {}};
  feed_capturing(ids, nullptr, progress, std::span<StateCapture>(&cap, 1));
  const size_t rows = log_.enabled() ? logged + pending + keep : logged;  // as the log stood at that id
  return SavePoint{std::move(cap.state), {}, std::move(cap.logits), true, rows};
}

void GenerationSession::feed_capturing(std::span<const int32_t> ids, std::vector<float>* all_rows,
                                       const ForwardPass::Progress& progress, std::span<StateCapture> captures) {
  std::vector<int32_t> input = pending_;
  input.insert(input.end(), ids.begin(), ids.end());
  if (input.empty()) return;  // nothing new: the current row stays
  check_token_ids(engine_.config(), input);
  const size_t vocab = static_cast<size_t>(engine_.config().vocab_size);
  const bool every_row = all_rows != nullptr || log_.enabled();
  std::vector<float> local;
  std::vector<float>& rows = all_rows ? *all_rows : local;
  rows.resize((every_row ? input.size() : 1) * vocab);
  const auto t0 = Clock::now();
  engine_.set_progress(progress);
  try {
    evaluate(input, every_row ? LogitRows::kAll : LogitRows::kLast, rows.data(), captures);
  } catch (...) {
    engine_.set_progress(nullptr);
    throw;
  }
  engine_.set_progress(nullptr);
  counters_.prefill_seconds += seconds_since(t0);
  counters_.prompt_ids += static_cast<int64_t>(input.size());
  if (every_row) log_.add(rows.data(), input.size());
  const float* last = rows.data() + (every_row ? (input.size() - 1) * vocab : 0);
  row_.assign(last, last + vocab);
  has_row_ = true;
  pending_.clear();
}

int32_t GenerationSession::sample() {
  if (!pending_.empty() || !has_row_)
    throw Error(ExitCode::kInternal, "GenerationSession::sample() without evaluated logits to sample from");
  // The draw is tied to the position the id will occupy (sample_rng.h), so
  // split and continued runs choose what one run would.
  const int32_t id = choose(row_.data(), position(), state_.tokens);
  if (constraint_) constraint_->accept(id);
  if (sample_observer_) sample_observer_(id, row_.data(), position());
  pending_.push_back(id);
  ++counters_.generated;
  return id;
}

int32_t GenerationSession::choose(const float* row, int64_t position, std::span<const int32_t> before) {
  const int64_t vocab = engine_.config().vocab_size;
  const TokenMask* mask = nullptr;
  if (constraint_) {
    const int64_t masks = constraint_->stats().masks;
    const auto t0 = Clock::now();
    mask = &constraint_->allowed();
    if (constraint_->stats().masks != masks) {  // computed now, not the one kept for this state
      const double t = seconds_since(t0);
      ++counters_.constraint_masks;
      counters_.constraint_seconds += t;
      counters_.constraint_max_seconds = std::max(counters_.constraint_max_seconds, t);
    }
  }
  return sampler_.next(row, vocab, position, before, mask);
}

void GenerationSession::evaluate_pending() {
  if (pending_.empty()) return;
  const auto& c = engine_.config();
  row_.resize(static_cast<size_t>(c.vocab_size));
  if (options_.recompute) {
    std::vector<int32_t> sequence = state_.tokens;
    sequence.insert(sequence.end(), pending_.begin(), pending_.end());
    check_token_ids(c, pending_);
    engine_.reset(state_);
    evaluate(sequence, LogitRows::kLast, row_.data());
  } else if (pending_.size() == 1) {
    evaluate(pending_, LogitRows::kLast, row_.data());
    ++counters_.decode_steps;
  } else {
    std::vector<float> rows(pending_.size() * row_.size());
    evaluate(pending_, LogitRows::kAll, rows.data());
    log_.add(rows.data(), pending_.size() - 1);
    std::copy(rows.end() - static_cast<ptrdiff_t>(row_.size()), rows.end(), row_.begin());
  }
  log_.add(row_.data(), 1);
  has_row_ = true;
  pending_.clear();
}

GenerationEnd GenerationSession::generate(int64_t max_new, const std::function<void(int32_t)>& on_token,
                                          const std::function<bool()>& interrupted) {
  const auto t0 = Clock::now();
  const int64_t passes0 = counters_.weight_passes;
  const std::function<bool()>& stop = pass_stop_ ? pass_stop_ : interrupted;
  const bool stoppable = stop_within_pass_ && stop && !(options_.recompute && keep_state_on_stop_);
  if (stoppable) engine_.set_stop(stop, keep_state_on_stop_);
  GenerationEnd end = GenerationEnd::kLength;
  pass_cut_ = false;
  try {
    end = generate_steps(max_new, on_token, interrupted);
  } catch (const Error& e) {
    if (stoppable) engine_.set_stop(nullptr, false);
    // A pass stopped part-way: the ids emitted so far stand, the pending ones stay pending.
    if (!stoppable || e.code() != ExitCode::kInterrupted) throw;
    end = GenerationEnd::kInterrupted;
    pass_cut_ = true;
  }
  if (stoppable) engine_.set_stop(nullptr, false);
  counters_.generate_passes += counters_.weight_passes - passes0;
  counters_.decode_seconds += seconds_since(t0);
  return end;
}

GenerationEnd GenerationSession::generate_steps(int64_t max_new, const std::function<void(int32_t)>& on_token,
                                                const std::function<bool()>& interrupted) {
  GenerationEnd end = GenerationEnd::kLength;
  evaluate_pending();
  int64_t made = 0;
  auto emit = [&](int32_t id) {
    ++made;
    on_token(id);
    if (drafts_) drafts_->generated(id);
  };
  while (made < max_new) {
    if (interrupted && interrupted()) {
      end = GenerationEnd::kInterrupted;
      break;
    }
    if (made == 0 && constraint_ && constraint_->finished()) {  // nothing may follow what is there
      end = GenerationEnd::kStop;
      break;
    }
    const int32_t id = sample();
    emit(id);
    if (ends_at(id)) {
      end = GenerationEnd::kStop;
      break;
    }
    if (made == max_new) break;  // the last id stays pending: only a continuation needs it evaluated
    // Drafts only as long as they can still become generated ids.
    std::vector<int32_t> drafts;
    if (drafts_ && options_.max_drafts > 0 && !options_.recompute) {
      std::vector<int32_t> context = state_.tokens;
      context.insert(context.end(), pending_.begin(), pending_.end());
      drafts =
          drafts_->propose(context, std::min<size_t>(options_.max_drafts, static_cast<size_t>(max_new - made - 1)));
    }
    if (drafts.empty()) {
      const size_t rows = pending_.size();
      evaluate_pending();
      if (pass_observer_) pass_observer_(options_.recompute ? state_.tokens.size() : rows);
      continue;
    }
    const Verified v = verify(drafts, made, max_new, emit, interrupted);
    if (v == Verified::kStop) end = GenerationEnd::kStop;
    if (v == Verified::kInterrupted) end = GenerationEnd::kInterrupted;
    if (v != Verified::kContinue) break;
  }
  return end;
}

GenerationSession::Verified GenerationSession::verify(const std::vector<int32_t>& drafts, int64_t& made,
                                                      int64_t max_new, const std::function<void(int32_t)>& emit,
                                                      const std::function<bool()>& interrupted) {
  const size_t vocab = static_cast<size_t>(engine_.config().vocab_size), k = drafts.size();
  std::vector<int32_t> rows = pending_;  // the current id, then the drafts
  rows.insert(rows.end(), drafts.begin(), drafts.end());
  const int64_t p0 = state_.positions;  // position of the current id
  std::vector<float> logits(rows.size() * vocab);
  SequenceState* seq = &state_;
  const std::span<const int32_t> ids(rows);
  RowHistory* hist = &history_;
  engine_.forward_sequences(std::span<SequenceState* const>(&seq, 1),
                            std::span<const std::span<const int32_t>>(&ids, 1), logits.data(),
                            std::span<RowHistory* const>(&hist, 1));
  ++counters_.weight_passes;
  if (pass_observer_) pass_observer_(rows.size());
  counters_.drafts_proposed += static_cast<int64_t>(k);
  pending_.clear();
  has_row_ = true;
  const size_t base = rows.size() - k - 1;  // rows before the current id (none unless more was pending)
  for (size_t i = 0; i < base; ++i) log_.add(logits.data() + i * vocab, 1);
  for (size_t i = 0;; ++i) {
    const float* r = logits.data() + (base + i) * vocab;
    log_.add(r, 1);
    if (i == k) {  // every draft kept: the next id comes from the last row
      row_.assign(r, r + vocab);
      counters_.drafts_accepted += static_cast<int64_t>(k);
      if (drafts_) drafts_->verified(k, k);
      return Verified::kContinue;
    }
    // Without drafts interrupted() is asked before each id is sampled (a
    // chat ends its reply there once the message is closed): the same here,
    // with the rows so far kept and this one current.
    if (interrupted && interrupted()) {
      engine_.rollback(state_, history_, base + i + 1);
      row_.assign(r, r + vocab);
      counters_.drafts_accepted += static_cast<int64_t>(i);  // the rest were not verified: no verdict to the source
      return Verified::kInterrupted;
    }
    const int64_t at = p0 + static_cast<int64_t>(i) + 1;
    const int32_t next = choose(r, at, std::span<const int32_t>(state_.tokens.data(), static_cast<size_t>(at)));
    if (next != drafts[i]) {  // rows past i were not what the model chooses
      engine_.rollback(state_, history_, base + i + 1);
      row_.assign(r, r + vocab);
      counters_.drafts_accepted += static_cast<int64_t>(i);
      if (drafts_) drafts_->verified(k, i);
      return Verified::kContinue;  // the caller samples `next` again from row_
    }
    if (constraint_) constraint_->accept(next);
    // Observed only once kept: a rejected position is chosen again from the
    // same row by sample(), and observed there, as without drafts.
    if (sample_observer_) sample_observer_(next, r, at);
    ++counters_.generated;
    emit(next);
    const bool ends = ends_at(next);
    if (ends || made == max_new) {
      // As without drafts: the last id is emitted, not evaluated.
      engine_.rollback(state_, history_, base + i + 1);
      row_.assign(r, r + vocab);
      pending_.push_back(next);
      counters_.drafts_accepted += static_cast<int64_t>(i) + 1;
      if (drafts_) drafts_->verified(k, i + 1);
      return ends ? Verified::kStop : Verified::kLength;
    }
  }
}

GenerationSession::SavePoint GenerationSession::mark() const {
  return SavePoint{state_, pending_, row_, has_row_, log_.rows()};
}

GenerationSession::SavePoint GenerationSession::release() {
  SavePoint out{std::move(state_), std::move(pending_), std::move(row_), has_row_, log_.rows()};
  state_ = SequenceState{};
  pending_.clear();
  row_.clear();
  has_row_ = false;
  return out;
}

void GenerationSession::rollback(SavePoint point) {
  state_ = std::move(point.state);
  pending_ = std::move(point.pending);
  row_ = std::move(point.row);
  has_row_ = point.has_row;
  log_.truncate(point.logged_rows);
}

void GenerationSession::save_conversation(const std::string& path, const ModelIdentity& model) const {
  SequenceState copy = state_;
  k3::save_conversation(path, model, std::move(copy), pending_, sampler_.params(), row_);
}

void GenerationSession::save_conversation_and_release(const std::string& path, const ModelIdentity& model) {
  k3::save_conversation(path, model, std::move(state_), pending_, sampler_.params(), row_);
  state_ = SequenceState{};
  has_row_ = false;
}

}  // namespace k3
