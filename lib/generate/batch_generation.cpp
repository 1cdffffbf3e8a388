#include "generate/batch_generation.h"

#include <chrono>
#include <span>

#include "common/clock.h"
#include "common/error.h"

namespace k3 {

BatchGeneration::BatchGeneration(ForwardPass& engine, std::vector<GenerationSession*> sessions)
    : engine_(engine), sessions_(std::move(sessions)) {
  for (GenerationSession* s : sessions_)
    if (!s->pending_.empty() || !s->has_row_ || &s->engine_ != &engine_)
      throw Error(ExitCode::kInternal, "BatchGeneration: each session must be fed on this engine first");
}

void BatchGeneration::generate(int64_t max_new, const std::function<void(size_t, int32_t)>& on_token,
                               const std::function<void(size_t, GenerationEnd)>& on_end,
                               const std::function<bool()>& interrupted,
                               const std::function<void(size_t rows)>& on_pass) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<size_t> active;
  for (size_t i = 0; i < sessions_.size(); ++i) {
    if (max_new > 0) active.push_back(i);
    else on_end(i, GenerationEnd::kLength);
  }
  std::vector<int64_t> made(sessions_.size(), 0);
  while (!active.empty()) {
    if (interrupted && interrupted()) {
      for (size_t i : active) on_end(i, GenerationEnd::kInterrupted);
      break;
    }
    // Sample one id per sequence; the ones that end leave before the pass.
    std::vector<size_t> next;
    for (size_t i : active) {
      GenerationSession& s = *sessions_[i];
      const int32_t id = s.sample();
      ++made[i];
      on_token(i, id);
      if (s.options_.stop.stops(id)) on_end(i, GenerationEnd::kStop);
      else if (made[i] == max_new) on_end(i, GenerationEnd::kLength);
      else next.push_back(i);
    }
    active = std::move(next);
    if (active.empty()) break;
    // One weight pass for every remaining sequence's id.
    std::vector<GenerationSession*> stepping;
    for (size_t i : active) stepping.push_back(sessions_[i]);
    step(engine_, stepping);
    ++passes_;
    if (on_pass) on_pass(active.size());
  }
  const double seconds = seconds_since(t0);
  for (GenerationSession* s : sessions_) s->counters_.decode_seconds += seconds;
}

void BatchGeneration::step(ForwardPass& engine, std::span<GenerationSession* const> sessions) {
  // A decode pass is step_rows with no new ids: each session's one pending
  // id is its only row, so its last row is every row it has.
  for (GenerationSession* s : sessions)
    if (s->pending_.size() != 1 || &s->engine_ != &engine)
      throw Error(ExitCode::kInternal, "BatchGeneration::step: each session must hold one pending id on this engine");
  step_rows(engine, sessions, std::vector<std::span<const int32_t>>(sessions.size()));
}

void BatchGeneration::take_row(GenerationSession& s, const std::vector<float>& logits, size_t k, size_t vocab) {
  s.row_.assign(logits.begin() + static_cast<ptrdiff_t>(k * vocab),
                logits.begin() + static_cast<ptrdiff_t>((k + 1) * vocab));
  ++s.counters_.weight_passes;
}

std::vector<SavePoint> BatchGeneration::step_rows(ForwardPass& engine, std::span<GenerationSession* const> sessions,
                                                  std::span<const std::span<const int32_t>> ids,
                                                  std::span<const SavePointWithin> keeps) {
  if (sessions.empty()) return {};
  if (ids.size() != sessions.size())
    throw Error(ExitCode::kInternal, "BatchGeneration::step_rows: one id list per session");
  const size_t vocab = static_cast<size_t>(engine.config().vocab_size);
  std::vector<std::vector<int32_t>> rows(sessions.size());
  std::vector<SequenceState*> states;
  std::vector<std::span<const int32_t>> spans;
  for (size_t k = 0; k < sessions.size(); ++k) {
    GenerationSession& s = *sessions[k];
    rows[k] = s.pending_;
    rows[k].insert(rows[k].end(), ids[k].begin(), ids[k].end());
    if (rows[k].empty()) throw Error(ExitCode::kInternal, "BatchGeneration::step_rows: a session without rows");
    // Only last rows are computed: a session that logs every row's logits
    // (k3-forward --logits) takes part with a single row only.
    if (&s.engine_ != &engine || (s.log_.enabled() && rows[k].size() != 1))
      throw Error(ExitCode::kInternal,
                  "BatchGeneration::step_rows: sessions of this engine, one with a logits log with a single row");
    states.push_back(&s.state_);
    spans.emplace_back(rows[k]);
  }
  // A keep inside a session's rows is captured by the pass; one at its end
  // is the session's mark() once the pass is done.
  std::vector<StateCapture> captures;
  for (const SavePointWithin& keep : keeps) {
    if (keep.sequence >= sessions.size() || keep.ids == 0 || keep.ids > ids[keep.sequence].size())
      throw Error(ExitCode::kInternal, "BatchGeneration::step_rows: a save point outside the session's ids");
    const size_t rows = sessions[keep.sequence]->pending_.size() + keep.ids;
    if (rows < spans[keep.sequence].size()) captures.push_back({keep.sequence, rows, {}, {}});
  }
  std::vector<size_t> logged;
  for (GenerationSession* s : sessions) logged.push_back(s->log_.rows());
  std::vector<float> logits(sessions.size() * vocab);
  engine.forward_sequences_last(states, spans, logits.data(), captures);
  for (size_t k = 0; k < sessions.size(); ++k) {
    GenerationSession& s = *sessions[k];
    take_row(s, logits, k, vocab);
    s.log_.add(s.row_.data(), 1);  // nothing when the session keeps no log
    s.has_row_ = true;
    if (ids[k].empty()) {  // a decode row
      ++s.counters_.decode_steps;
      ++s.counters_.generate_passes;
    } else {
      s.counters_.prompt_ids += static_cast<int64_t>(rows[k].size());
    }
    s.pending_.clear();
  }
  std::vector<SavePoint> points;
  auto captured = captures.begin();
  for (const SavePointWithin& keep : keeps) {
    GenerationSession& s = *sessions[keep.sequence];
    if (keep.ids == ids[keep.sequence].size()) {
      points.push_back(s.mark());
      continue;
    }
    StateCapture& cap = *captured++;
    points.push_back({std::move(cap.state), {}, std::move(cap.logits), true, logged[keep.sequence]});
  }
  return points;
}

}  // namespace k3
