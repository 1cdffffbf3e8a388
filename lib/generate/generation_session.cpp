#include "generate/generation_session.h"

#include <chrono>
#include <utility>

#include "common/error.h"
#include "state/continuation.h"

namespace k3 {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Weight passes of one forward() call over n ids: one per engine batch.
int64_t passes_for(const Engine& engine, size_t n) {
  return static_cast<int64_t>((n + engine.max_batch() - 1) / engine.max_batch());
}

}  // namespace

GenerationSession::GenerationSession(Engine& engine, GenerationOptions options)
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

void GenerationSession::evaluate(std::span<const int32_t> ids, LogitRows rows, float* out) {
  engine_.forward(state_, ids, rows, out);
  counters_.weight_passes += passes_for(engine_, ids.size());
}

void GenerationSession::feed(std::span<const int32_t> ids, std::vector<float>* all_rows,
                             const Engine::Progress& progress) {
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
    evaluate(input, every_row ? LogitRows::kAll : LogitRows::kLast, rows.data());
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
  const int32_t id = sampler_.next(row_.data(), engine_.config().vocab_size, position());
  pending_.push_back(id);
  ++counters_.generated;
  return id;
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
  GenerationEnd end = GenerationEnd::kLength;
  evaluate_pending();
  for (int64_t made = 0; made < max_new;) {
    if (interrupted && interrupted()) {
      end = GenerationEnd::kInterrupted;
      break;
    }
    const int32_t id = sample();
    ++made;
    on_token(id);
    if (options_.stop.stops(id)) {
      end = GenerationEnd::kStop;
      break;
    }
    if (made == max_new) break;  // the last id stays pending: only a continuation needs it evaluated
    evaluate_pending();
  }
  counters_.decode_seconds += seconds_since(t0);
  return end;
}

GenerationSession::SavePoint GenerationSession::mark() const {
  return SavePoint{state_, pending_, row_, has_row_, log_.rows()};
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
