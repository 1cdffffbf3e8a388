// Progress while --gen N tokens are generated: tokens done of N, seconds per
// token and the ETA, shown where it cannot erase the generated text.
//
// The text may be on the same terminal as stderr (`k3-forward | k3-detok`,
// or ids on stdout), and k3-forward cannot know where the cursor is, so a
// line rewritten in place would overwrite it. Where the figures go:
//  - kTitle: stdout is a terminal or a pipe (the text may be on the screen):
//    the terminal's window title, which never moves the cursor; the title
//    is saved first and given back at the end (xterm's title stack).
//  - kLine: stdout is a file or a device nobody reads on this screen
//    (`> ids.txt`, /dev/null): one line rewritten in place, erased at the end.
//  - kOff: stderr is not a terminal (logs, captured stderr), K3_PROGRESS=plain.
// K3_PROGRESS=tty treats stderr as a terminal (tests).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace k3 {

class DecodeProgress {
 public:
  enum class Mode { kOff, kLine, kTitle };
  // `total`: the tokens asked for (--gen). `out` is stderr outside tests;
  // lines at most every `interval`.
  DecodeProgress(std::string tool, int64_t total, Mode mode, std::FILE* out = stderr,
                 std::chrono::duration<double> interval = std::chrono::milliseconds(250));
  // For the tool: the mode from where stdout and stderr go (mode_for()).
  DecodeProgress(std::string tool, int64_t total);
  ~DecodeProgress() { finish(); }
  DecodeProgress(const DecodeProgress&) = delete;
  DecodeProgress& operator=(const DecodeProgress&) = delete;
  // `done` tokens have been generated.
  void update(int64_t done);
  // Erases the line or gives the title back (call when generation ends,
  // before any other stderr output).
  void finish();
  // The figures for `done` of `total` tokens at `per_token` seconds each (0:
  // not known yet), without the \r.
  static std::string line(const std::string& tool, int64_t done, int64_t total, double per_token);
  // kOff when stderr is not a terminal (progress_on_terminal()), kLine when
  // `stdout_fd` is a regular file or a character device that is not a
  // terminal, kTitle otherwise.
  static Mode mode_for(int stdout_fd);

 private:
  std::string tool_;
  int64_t total_;
  Mode mode_;
  std::FILE* out_;
  std::chrono::duration<double> interval_;
  std::chrono::steady_clock::time_point first_, last_;
  int64_t first_done_ = -1;
  bool shown_ = false;
};

}  // namespace k3
