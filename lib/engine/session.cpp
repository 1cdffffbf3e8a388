#include "engine/session.h"

#include <algorithm>

#include "engine/model.h"

namespace k3 {

namespace {

bool starts_with(std::span<const int32_t> ids, const std::vector<int32_t>& prefix) {
  return prefix.size() <= ids.size() && std::equal(prefix.begin(), prefix.end(), ids.begin());
}

}  // namespace

Session::Session(Model& model, std::unique_ptr<GenerationSession> generation)
    : model_(&model), gen_(std::move(generation)) {
  gen_->reset();
}

Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

void Session::reset() {
  gen_->reset();
  ids_.clear();
  ids_known_ = true;
  point_.reset();
  point_ids_.clear();
}

void Session::restore(ConversationState&& saved) {
  gen_->restore(std::move(saved));
  ids_.clear();
  ids_known_ = false;
}

void Session::save(const std::string& path, const ModelIdentity& identity) const {
  gen_->save_conversation(path, identity);
}

void Session::prefill(std::span<const int32_t> ids, const Engine::Progress& progress) {
  const bool known = ids_known_;
  ids_known_ = false;  // until the prefill is complete (a throwing progress abandons it)
  gen_->feed(ids, nullptr, progress);
  ids_.insert(ids_.end(), ids.begin(), ids.end());
  ids_known_ = known;
}

size_t Session::prefill_reusing(std::span<const int32_t> prompt, size_t keep_prefix,
                                const Engine::Progress& progress) {
  size_t from = 0;
  if (ids_known_ && starts_with(prompt, ids_)) {
    from = ids_.size();  // what was generated re-renders as it was
  } else if (point_ && starts_with(prompt, point_ids_)) {
    gen_->rollback(*point_);  // a copy: the point stays usable
    ids_ = point_ids_;
    ids_known_ = true;
    from = point_ids_.size();
  } else {
    reset();
  }
  const size_t reused = from - std::min(from, gen_->pending().size());
  const size_t point = std::min(keep_prefix, prompt.size());
  if (from < point) prefill(prompt.subspan(from, point - from), progress);
  if (from <= point) {
    point_ = gen_->mark();
    point_ids_.assign(prompt.begin(), prompt.begin() + static_cast<ptrdiff_t>(point));
  }
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

GenerationEnd Session::generate(int64_t max_new, const std::function<void(int32_t)>& on_token,
                                const std::function<bool()>& interrupted) {
  return gen_->generate(
      max_new,
      [&](int32_t id) {
        ids_.push_back(id);
        if (on_token) on_token(id);
      },
      interrupted);
}

}  // namespace k3
