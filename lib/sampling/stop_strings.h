// Stop strings (--stop TEXT, OpenAI's `stop`): generation ends where the
// generated text first contains one of them, matched on the decoded text
// across token boundaries; the stop text itself and what follows it are
// not shown.
//
// Text is pushed as it is decoded; what comes back may be shown at once.
// Text that could still turn out to be the start of a stop string (the
// longest end of it that is a prefix of one) is held back until the next
// piece decides it. Matching is on bytes (UTF-8 stop strings match UTF-8
// text); the earliest match wins, and among matches at one place the first
// stop string given.
//
// StopStringIds does the same for a tool that writes ids (k3-forward): an id
// is released once its text is known not to reach into a stop string, and
// at a match the ids whose text lies wholly before the stop text are
// released; the id in which the stop text begins is not (an id cannot be
// cut), so its text before the stop string is not written either.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace k3 {

// The key messages name the stop texts by (common/setting_spelling.h; the tools: --stop).
inline constexpr const char* kStopSetting = "stop";

class StopStrings {
 public:
  // Throws k3::Error(kUsage) for an empty stop string.
  explicit StopStrings(std::vector<std::string> stops);
  bool empty() const { return stops_.empty(); }

  // Appends `text`; returns the text that can be shown now. After a match
  // (stopped()) it returns what preceded the stop string, and then nothing.
  std::string push(std::string_view text);
  // The text held back, at the end of generation without a match.
  std::string finish();
  bool stopped() const { return stopped_; }

  // The length of the text that can be released from `pending`: its
  // earliest match's offset (sets `matched`), or everything but the
  // longest end of it that is a prefix of a stop string.
  size_t releasable(std::string_view pending, bool& matched) const;

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

class StopStringIds {
 public:
  explicit StopStringIds(std::vector<std::string> stops) : text_(std::move(stops)) {}
  bool empty() const { return text_.empty(); }
  // Adds a generated id with its text bytes; returns the ids that can be written now.
  std::vector<int32_t> push(int32_t id, std::string_view bytes);
  // The ids held back, at the end of generation without a match.
  std::vector<int32_t> finish();
  bool stopped() const { return stopped_; }

 private:
  StopStrings text_;
  std::string pending_;                          // the text of the held ids
  std::deque<std::pair<int32_t, size_t>> held_;  // id, end of its text in pending_
  bool stopped_ = false;
};

}  // namespace k3
