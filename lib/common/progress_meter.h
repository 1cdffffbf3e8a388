// Progress of long work on stderr: a self-rewriting line with bytes, rate and
// ETA on a terminal, a plain line every few seconds otherwise (logs, CI).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace k3 {

class ProgressMeter {
 public:
  // `label` starts every line ("k3-pack: packing").
  ProgressMeter(std::string label, uint64_t total_bytes);
  // Ends a line left open on a terminal when an exception unwinds it (work
  // cut by an error or Ctrl-C before finish()), so the message that follows
  // starts a line of its own instead of "ETA 267sk3-pack: interrupted". A
  // meter replaced by the next step's leaves its line to be rewritten.
  ~ProgressMeter();
  ProgressMeter(const ProgressMeter&) = delete;
  ProgressMeter& operator=(const ProgressMeter&) = delete;
  // Reports `done` bytes; rate-limited, cheap to call often.
  void update(uint64_t done);
  // Final line (always printed).
  void finish(uint64_t done);
  bool on_terminal() const { return tty_; }
  // Whether update() has printed a line yet.
  bool printed() const { return printed_; }

 private:
  void print(uint64_t done, bool final);
  std::string label_;
  uint64_t total_;
  bool tty_;
  bool printed_ = false;
  bool line_open_ = false;   // a terminal line written without its line end
  int exceptions_at_start_;  // std::uncaught_exceptions() when made
  std::chrono::steady_clock::time_point start_, last_;
};

// Whether progress goes to stderr as a terminal line rewritten in place:
// K3_PROGRESS=tty or =plain forces one style (tests, `script` sessions),
// otherwise it is whether fd 2 is a terminal.
bool progress_on_terminal();

}  // namespace k3
