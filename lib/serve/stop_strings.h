// OpenAI's `stop` strings over text that arrives in pieces: text is let out
// only once no stop string can start in it, and at the first stop string the
// text ends (the stop string itself is not part of the reply). What is let
// out, concatenated, equals the whole text cut at its first stop string,
// however the pieces were split.
#pragma once

#include <string>
#include <vector>

namespace k3::serve {

class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  // Adds `piece`; returns the text that is final now.
  std::string push(const std::string& piece);
  // End of the text: the held-back rest (nothing once stopped).
  std::string finish();
  bool stopped() const { return stopped_; }
  // The stop string that was read ("" until stopped): the earliest in the text.
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;  // text that may be the start of a stop string
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace k3::serve
