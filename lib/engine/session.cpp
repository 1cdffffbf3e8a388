#include "engine/session.h"

#include <algorithm>
#include <type_traits>

#include "engine/model.h"
#include "engine/prefix_reuse.h"
#include "generate/generation_session.h"
#include "state/continuation.h"

namespace k3 {

Session::Session(Model& model, std::unique_ptr<GenerationSession> generation)
    : model_(&model), gen_(std::move(generation)) {
  gen_->reset();
}

Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

// Session's types stand in for lib/generate's, which its header does not show.
static_assert(std::is_same_v<Session::Progress, ForwardPass::Progress>);
static_assert(std::is_same_v<Session::SampleObserver, GenerationSession::SampleObserver>);

void Session::set_drafts(DraftSource* source) { gen_->set_draft_source(source); }
void Session::set_stop_within_pass(std::function<bool()> stop) {
  const bool on = static_cast<bool>(stop);
  gen_->set_stop_within_pass(on, false, std::move(stop));
}
void Session::stop_passes_when_interrupted(bool keep_state) { gen_->set_stop_within_pass(true, keep_state); }
bool Session::pass_cut() const { return gen_->pass_cut(); }
void Session::set_constraint(OutputConstraint* constraint) { gen_->set_constraint(constraint); }
void Session::set_sample_observer(SampleObserver observer) { gen_->set_sample_observer(std::move(observer)); }
Session::SavePoint Session::mark() const { return gen_->mark(); }
int64_t Session::position() const { return gen_->position(); }
const std::vector<int32_t>& Session::pending() const { return gen_->pending(); }
const SequenceState& Session::state() const { return gen_->state(); }
const std::vector<float>& Session::current_row() const { return gen_->current_row(); }
const LogitsLog& Session::logits_log() const { return gen_->logits_log(); }
const StopConditions& Session::stop_conditions() const { return gen_->stop_conditions(); }
const GenerationCounters& Session::counters() const { return gen_->counters(); }

void Session::reset() {
  gen_->reset();
  ids_.clear();
  ids_known_ = true;
  points_.clear();
}

void Session::restore(ConversationState&& saved) {
  gen_->restore(std::move(saved));
  ids_.clear();
  ids_known_ = false;
}

void Session::restore_reusable(ConversationState&& saved) {
  std::vector<int32_t> ids = saved.sequence.tokens;
  ids.insert(ids.end(), saved.pending.begin(), saved.pending.end());
  reset();
  gen_->restore(std::move(saved));
  ids_ = std::move(ids);
}

void Session::save(const std::string& path, const ModelIdentity& identity) const {
  gen_->save_conversation(path, identity);
}

size_t Session::save_reusable(const std::string& path, const ModelIdentity& identity,
                              std::span<const int32_t> next) const {
  if (ids_known_ && !ids_.empty() && is_id_prefix(ids_, next)) {
    gen_->save_conversation(path, identity);
    return ids_.size();
  }
  for (auto p = points_.rbegin(); p != points_.rend(); ++p) {
    if (p->ids.empty() || !is_id_prefix(p->ids, next)) continue;
    SequenceState copy = p->point.state;  // the point stays usable
    save_conversation(path, identity, std::move(copy), p->point.pending, gen_->sampling(), p->point.row);
    return p->ids.size();
  }
  return 0;
}

void Session::prefill(std::span<const int32_t> ids, const Progress& progress, std::vector<float>* all_rows) {
  const bool known = ids_known_;
  ids_known_ = false;  // until the prefill is complete (a throwing progress abandons it)
  gen_->feed(ids, all_rows, progress);
  ids_.insert(ids_.end(), ids.begin(), ids.end());
  ids_known_ = known;
}

size_t Session::prefill_reusing(std::span<const int32_t> prompt, size_t keep_prefix, const Progress& progress) {
  size_t from = 0;
  if (ids_known_ && is_id_prefix(ids_, prompt)) {
    from = ids_.size();  // what was generated re-renders as it was
  } else if (const Point* p = longest_point(prompt)) {
    gen_->rollback(p->point);  // a copy: the point stays usable
    ids_ = p->ids;
    ids_known_ = true;
    from = p->ids.size();
  } else {
    reset();
  }
  const size_t reused = from - std::min(from, gen_->pending().size());
  const size_t point = std::min(keep_prefix, prompt.size());
  if (from < point && point < prompt.size()) {
    // The point is taken within the one prefill of the rest: no read of the
    // weights ends there. The oldest point goes first (as in take_point: at
    // most kSavePoints copies once it is kept).
    const std::span<const int32_t> kept = prompt.first(point);
    const bool known =
        std::any_of(points_.begin(), points_.end(), [&](const Point& p) { return std::ranges::equal(p.ids, kept); });
    if (!known && points_.size() >= kSavePoints) points_.erase(points_.begin());
    const bool was_known = ids_known_;
    ids_known_ = false;  // until the prefill is complete, as in prefill()
    SavePoint taken = gen_->feed_keeping(prompt.subspan(from), point - from, progress);
    ids_.insert(ids_.end(), prompt.begin() + static_cast<ptrdiff_t>(from), prompt.end());
    ids_known_ = was_known;
    take_point(kept, &taken);
    return reused;
  }
  if (from < point) prefill(prompt.subspan(from, point - from), progress);
  if (from <= point) take_point(prompt.first(point));
  const size_t rest = std::max(from, point);
  if (rest < prompt.size()) prefill(prompt.subspan(rest), progress);
  return reused;
}

int32_t Session::step() {
  int32_t id = -1;
  gen_->generate(1, [&](int32_t t) { id = t; });
  ids_.push_back(id);
  return id;
}

int32_t Session::sample() {
  const int32_t id = gen_->sample();
  ids_.push_back(id);
  return id;
}

void Session::rollback(const SavePoint& point) {
  gen_->rollback(point);  // a copy: the point stays usable
  ids_ = point.state.tokens;
  ids_.insert(ids_.end(), point.pending.begin(), point.pending.end());
  ids_known_ = true;
}

Session::SavePoint Session::release() {
  ids_.clear();
  ids_known_ = true;
  return gen_->release();
}

void Session::save_and_release(const std::string& path, const ModelIdentity& identity) {
  gen_->save_conversation_and_release(path, identity);
  ids_.clear();
  ids_known_ = true;
}

GenerationEnd Session::generate(int64_t max_new, const std::function<void(int32_t)>& on_token,
                                const std::function<bool()>& interrupted) {
  const GenerationEnd end = gen_->generate(
      max_new,
      [&](int32_t id) {
        ids_.push_back(id);
        if (on_token) on_token(id);
      },
      interrupted);
  // A pass stopped part-way leaves the sequence between two layers.
  if (gen_->pass_cut()) ids_known_ = false;
  return end;
}

const Session::Point* Session::longest_point(std::span<const int32_t> prompt) const {
  const auto best = longest_prefix_state(points_.begin(), points_.end(), prompt,
                                         [](const Point& p) { return std::span<const int32_t>(p.ids); });
  return best == points_.end() ? nullptr : &*best;
}

void Session::take_point(std::span<const int32_t> ids, SavePoint* taken) {
  // The same ids are the same state: the point is kept (as the newest).
  for (size_t i = 0; i < points_.size(); ++i) {
    if (!std::equal(ids.begin(), ids.end(), points_[i].ids.begin(), points_[i].ids.end())) continue;
    std::rotate(points_.begin() + static_cast<ptrdiff_t>(i), points_.begin() + static_cast<ptrdiff_t>(i) + 1,
                points_.end());
    return;
  }
  // The oldest goes before the copy is made: at most kSavePoints copies at once.
  if (points_.size() >= kSavePoints) points_.erase(points_.begin());
  points_.push_back({taken ? std::move(*taken) : gen_->mark(), std::vector<int32_t>(ids.begin(), ids.end())});
}

}  // namespace k3
