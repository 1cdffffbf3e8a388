#include "sampling/stop_strings.h"

#include "common/error.h"
#include "common/setting_spelling.h"

namespace k3 {

StopStrings::StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (const std::string& s : stops_)
    if (s.empty()) throw Error(ExitCode::kUsage, spelled(kStopSetting) + " needs a non-empty text");
}

size_t StopStrings::releasable(std::string_view pending, bool& matched) const {
  matched = false;
  size_t first = std::string_view::npos;
  for (const std::string& s : stops_) {
    const size_t at = pending.find(s);
    if (at < first) first = at;
  }
  if (first != std::string_view::npos) {
    matched = true;
    return first;
  }
  // Hold back the longest end of `pending` that a stop string starts with.
  size_t hold = 0;
  for (const std::string& s : stops_)
    for (size_t k = std::min(s.size() - 1, pending.size()); k > hold; --k)
      if (pending.substr(pending.size() - k) == std::string_view(s).substr(0, k)) {
        hold = k;
        break;
      }
  return pending.size() - hold;
}

std::string StopStrings::push(std::string_view text) {
  if (stopped_) return {};
  held_.append(text);
  bool matched = false;
  const size_t n = releasable(held_, matched);
  std::string out = held_.substr(0, n);
  if (matched) {
    stopped_ = true;
    held_.clear();
  } else {
    held_.erase(0, n);
  }
  return out;
}

std::string StopStrings::finish() {
  std::string out = stopped_ ? std::string() : std::move(held_);
  held_.clear();
  return out;
}

std::vector<int32_t> StopStringIds::push(int32_t id, std::string_view bytes) {
  std::vector<int32_t> out;
  if (stopped_) return out;
  pending_.append(bytes);
  held_.emplace_back(id, pending_.size());
  bool matched = false;
  const size_t n = text_.releasable(pending_, matched);
  // Release the ids whose text ends within the releasable part.
  size_t released_end = 0;
  while (!held_.empty() && held_.front().second <= n) {
    out.push_back(held_.front().first);
    released_end = held_.front().second;
    held_.pop_front();
  }
  if (matched) {
    stopped_ = true;
    held_.clear();
    pending_.clear();
    return out;
  }
  // Drop the released text; the held ids' ends move back with it.
  pending_.erase(0, released_end);
  for (auto& h : held_) h.second -= released_end;
  return out;
}

std::vector<int32_t> StopStringIds::finish() {
  std::vector<int32_t> out;
  if (!stopped_)
    for (const auto& h : held_) out.push_back(h.first);
  held_.clear();
  pending_.clear();
  return out;
}

}  // namespace k3
