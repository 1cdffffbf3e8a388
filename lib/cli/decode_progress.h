// A one-line progress display while --gen N tokens are generated: tokens
// done of N, seconds per token and the ETA, rewritten in place and erased at
// the end. Only on a terminal (common/progress_on_terminal()): off one, it
// prints nothing, so logs and captured stderr are not filled with it.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace k3 {

class DecodeProgress {
 public:
  // `total`: the tokens asked for (--gen). `out` is stderr outside tests;
  // `on_terminal` whether to show anything; lines at most every `interval`.
  DecodeProgress(std::string tool, int64_t total, bool on_terminal, std::FILE* out = stderr,
                 std::chrono::duration<double> interval = std::chrono::milliseconds(250));
  // For the tool: shows only when stderr is a terminal.
  DecodeProgress(std::string tool, int64_t total);
  ~DecodeProgress() { finish(); }
  DecodeProgress(const DecodeProgress&) = delete;
  DecodeProgress& operator=(const DecodeProgress&) = delete;
  // `done` tokens have been generated.
  void update(int64_t done);
  // Erases the line (call when generation ends, before any other stderr output).
  void finish();
  // The line for `done` of `total` tokens at `per_token` seconds each (0:
  // not known yet), without the \r.
  static std::string line(const std::string& tool, int64_t done, int64_t total, double per_token);

 private:
  std::string tool_;
  int64_t total_;
  bool on_;
  std::FILE* out_;
  std::chrono::duration<double> interval_;
  std::chrono::steady_clock::time_point first_, last_;
  int64_t first_done_ = -1;
  bool shown_ = false;
};

}  // namespace k3
