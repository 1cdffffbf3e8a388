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
  std::chrono::steady_clock::time_point start_, last_;
};

// Whether progress goes to stderr as a terminal line rewritten in place:
// K3_PROGRESS=tty or =plain forces one style (tests, `script` sessions),
// otherwise it is whether fd 2 is a terminal.
bool progress_on_terminal();

}  // namespace k3
