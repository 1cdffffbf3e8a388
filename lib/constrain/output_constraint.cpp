#include "constrain/output_constraint.h"

#include <chrono>

#include "common/clock.h"
#include "common/error.h"

namespace k3 {

ConstraintStep ConstraintStep::free(std::vector<int32_t> forbidden, int32_t until) {
  ConstraintStep s;
  s.kind = Kind::kFree;
  s.forbidden = std::move(forbidden);
  s.until = until;
  return s;
}
ConstraintStep ConstraintStep::forced(std::vector<std::vector<int32_t>> sequences,
                                      std::vector<std::vector<ConstraintStep>> branches) {
  ConstraintStep s;
  s.kind = Kind::kForced;
  s.sequences = std::move(sequences);
  s.branches = std::move(branches);
  return s;
}
ConstraintStep ConstraintStep::json(std::shared_ptr<const JsonGrammar> grammar) {
  ConstraintStep s;
  s.kind = Kind::kJson;
  s.grammar = std::move(grammar);
  return s;
}
ConstraintStep ConstraintStep::end(std::vector<int32_t> ids) {
  ConstraintStep s;
  s.kind = Kind::kEnd;
  s.ids = std::move(ids);
  return s;
}

OutputConstraint::OutputConstraint(std::vector<ConstraintStep> steps, const VocabularyTrie& vocab)
    : steps_(std::move(steps)), vocab_(vocab), mask_(vocab.size()) {
  if (steps_.empty()) throw Error(ExitCode::kInternal, "output constraint: no step");
  for (const ConstraintStep& s : steps_)
    if (s.kind == ConstraintStep::Kind::kForced) {
      if (s.sequences.empty() || (!s.branches.empty() && s.branches.size() != s.sequences.size()))
        throw Error(ExitCode::kInternal,
                    "output constraint: a forced step without sequences, or branches not one each");
      for (const auto& seq : s.sequences)
        if (seq.empty()) throw Error(ExitCode::kInternal, "output constraint: empty forced sequence");
    }
  enter(0);
}

void OutputConstraint::enter(size_t step) {
  step_ = step;
  json_.reset();
  forced_at_ = 0;
  live_.clear();
  mask_valid_ = false;
  if (step_ >= steps_.size()) {
    ended_ = true;
    return;
  }
  const ConstraintStep& s = steps_[step_];
  if (s.kind == ConstraintStep::Kind::kJson) json_.emplace(s.grammar, vocab_);
  if (s.kind == ConstraintStep::Kind::kForced)
    for (size_t i = 0; i < s.sequences.size(); ++i) live_.push_back(i);
}

void OutputConstraint::add_first_ids(size_t s, TokenMask& mask) const {
  if (s >= steps_.size()) return;
  const ConstraintStep& st = steps_[s];
  switch (st.kind) {
    case ConstraintStep::Kind::kFree:
      mask.allow_all();
      for (int32_t id : st.forbidden) mask.forbid(id);
      break;
    case ConstraintStep::Kind::kForced:
      for (const auto& seq : st.sequences) mask.allow(seq[0]);
      break;
    case ConstraintStep::Kind::kEnd:
      for (int32_t id : st.ids) mask.allow(id);
      break;
    case ConstraintStep::Kind::kJson:
      // Two values in a row are not a program k3 builds.
      throw Error(ExitCode::kInternal, "output constraint: a json step right after a json step");
  }
}

void OutputConstraint::compute() {
  if (mask_valid_) return;
  const auto t0 = std::chrono::steady_clock::now();
  mask_.clear();
  if (!ended_) {
    const ConstraintStep& s = steps_[step_];
    switch (s.kind) {
      case ConstraintStep::Kind::kFree:
      case ConstraintStep::Kind::kEnd: add_first_ids(step_, mask_); break;
      case ConstraintStep::Kind::kForced:
        for (size_t i : live_) mask_.allow(s.sequences[i][forced_at_]);
        break;
      case ConstraintStep::Kind::kJson:
        json_->allowed(mask_);
        if (json_->complete()) add_first_ids(step_ + 1, mask_);
        break;
    }
  }
  const double t = seconds_since(t0);
  ++stats_.masks;
  stats_.mask_seconds += t;
  if (t > stats_.max_mask_seconds) stats_.max_mask_seconds = t;
  mask_valid_ = true;
}

const TokenMask& OutputConstraint::allowed() {
  compute();
  if (mask_.count() == 0)
    throw Error(ExitCode::kInternal, ended_ ? "output constraint: the constrained output is already complete"
                                            : "output constraint: no id can continue the output (a value nested "
                                              "past the recognizer's limits)");
  return mask_;
}

bool OutputConstraint::finished() {
  if (ended_) return true;
  const ConstraintStep& s = steps_[step_];
  if (s.kind == ConstraintStep::Kind::kEnd && s.ids.empty()) return true;
  if (s.kind == ConstraintStep::Kind::kJson && step_ + 1 < steps_.size() &&
      steps_[step_ + 1].kind == ConstraintStep::Kind::kEnd && steps_[step_ + 1].ids.empty()) {
    compute();
    return mask_.count() == 0 && json_->complete();
  }
  return false;
}

void OutputConstraint::accept(int32_t id) {
  compute();
  if (!mask_.allowed(id))
    throw Error(ExitCode::kInternal, "output constraint: id " + std::to_string(id) + " was not allowed here");
  const ConstraintStep& s = steps_[step_];
  switch (s.kind) {
    case ConstraintStep::Kind::kFree:
      if (id == s.until) return enter(step_ + 1);
      mask_valid_ = true;  // the same ids stay allowed
      return;
    case ConstraintStep::Kind::kEnd: return enter(steps_.size());
    case ConstraintStep::Kind::kForced: {
      std::vector<size_t> still;
      for (size_t i : live_)
        if (s.sequences[i][forced_at_] == id) still.push_back(i);
      live_ = std::move(still);
      ++forced_at_;
      for (size_t i : live_)
        if (s.sequences[i].size() == forced_at_) {
          if (!s.branches.empty()) {  // the rest of the program is this sequence's
            std::vector<ConstraintStep> rest = s.branches[i];
            steps_.resize(step_ + 1);
            for (ConstraintStep& r : rest) steps_.push_back(std::move(r));
          }
          return enter(step_ + 1);
        }
      mask_valid_ = false;
      return;
    }
    case ConstraintStep::Kind::kJson:
      if (vocab_.is_text(id) && json_->accept(vocab_.bytes(id))) {
        mask_valid_ = false;
        return;
      }
      // The value is complete and this id begins the next step.
      enter(step_ + 1);
      return accept(id);
  }
}

}  // namespace k3
