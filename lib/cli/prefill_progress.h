// Progress lines on stderr while a long prompt runs (every 2 s: layer steps
// done, elapsed, ETA; one updating line on a terminal, erased when the
// prompt is done), and Ctrl-C abandons the prompt (exit 130). Passed to
// Session::prefill(); one object serves every prompt of a chat: the
// clock starts at each prompt's first layer step, not at construction (the
// time a user spends typing is not prompt time).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace k3 {

class PrefillProgress {
 public:
  explicit PrefillProgress(std::string tool);
  void operator()(int64_t done, int64_t total);
  // Erases the progress line on a terminal (done by itself when the last
  // step of a prompt is reported; call it when a prompt is abandoned).
  void finish();

 private:
  std::string tool_;
  std::chrono::steady_clock::time_point start_, last_;
  int64_t last_done_ = 0;
  bool tty_ = false, reported_ = false;
};

}  // namespace k3
