#include "common/progress_meter.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "common/byte_format.h"
#include "common/clock.h"

namespace k3 {

ProgressMeter::ProgressMeter(std::string label, uint64_t total_bytes)
    : label_(std::move(label)),
      total_(total_bytes),
      tty_(progress_on_terminal()),
      exceptions_at_start_(std::uncaught_exceptions()) {
  start_ = last_ = std::chrono::steady_clock::now();
}

ProgressMeter::~ProgressMeter() {
  if (!line_open_ || std::uncaught_exceptions() <= exceptions_at_start_) return;
  std::fputs("\n", stderr);
  std::fflush(stderr);
}

bool progress_on_terminal() {
  if (const char* v = std::getenv("K3_PROGRESS")) {
    if (std::strcmp(v, "tty") == 0) return true;
    if (std::strcmp(v, "plain") == 0) return false;
  }
  return ::isatty(2) == 1;
}

void ProgressMeter::update(uint64_t done) {
  auto now = std::chrono::steady_clock::now();
  const auto gap = tty_ ? std::chrono::milliseconds(200) : std::chrono::milliseconds(5000);
  if (now - last_ < gap) return;
  last_ = now;
  printed_ = true;
  print(done, false);
}

void ProgressMeter::finish(uint64_t done) { print(done, true); }

void ProgressMeter::print(uint64_t done, bool final) {
  const double secs = seconds_since(start_);
  const double rate = secs > 0 ? done / secs : 0;
  char eta[32] = "";
  if (!final && rate > 0 && total_ > done) std::snprintf(eta, sizeof eta, ", ETA %.0fs", (total_ - done) / rate);
  const double pct = total_ ? 100.0 * done / total_ : 100.0;
  std::fprintf(stderr, "%s%s: %s / %s (%.1f%%), %s/s%s%s%s", tty_ ? "\r" : "", label_.c_str(),
               format_bytes(done).c_str(), format_bytes(total_).c_str(), pct, format_bytes((uint64_t)rate).c_str(), eta,
               final ? ", done" : "",
               !tty_   ? "\n"
               : final ? "\x1b[K\n"
                       : "\x1b[K");
  std::fflush(stderr);
  line_open_ = tty_ && !final;
}

}  // namespace k3
