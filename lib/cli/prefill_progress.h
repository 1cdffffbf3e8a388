// Progress lines on stderr while a long prompt runs (every 2 s: layer steps
// done, elapsed, ETA; one updating line on a terminal), and Ctrl-C abandons
// the prompt (exit 130). Passed to GenerationSession::feed().
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace k3 {

class PrefillProgress {
 public:
  explicit PrefillProgress(std::string tool);
  void operator()(int64_t done, int64_t total);
  // Ends the progress line on a terminal (call after the prefill).
  void finish();

 private:
  std::string tool_;
  std::chrono::steady_clock::time_point start_, last_;
  bool tty_ = false, reported_ = false;
};

}  // namespace k3
