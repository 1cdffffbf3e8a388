#include "cli/prefill_progress.h"

#include <unistd.h>

#include <cstdio>

#include "cli/interrupt.h"
#include "common/error.h"

namespace k3 {

PrefillProgress::PrefillProgress(std::string tool)
    : tool_(std::move(tool)), start_(std::chrono::steady_clock::now()), last_(start_), tty_(::isatty(2) != 0) {}

void PrefillProgress::operator()(int64_t done, int64_t total) {
  if (interrupted()) {
    finish();
    throw Error(ExitCode::kInterrupted, "interrupted while running the prompt; nothing was generated");
  }
  const auto now = std::chrono::steady_clock::now();
  if (done <= last_done_ || last_done_ == 0) {
    // A new prompt (steps count from 1 for each): its clock starts now, with
    // the first step's time estimated as the mean of the rest.
    finish();
    start_ = last_ = now;
    last_done_ = done;
    return;
  }
  last_done_ = done;
  if (done >= total) return finish();
  if (std::chrono::duration<double>(now - last_).count() < 2.0) return;
  last_ = now;
  reported_ = true;
  const double s = std::chrono::duration<double>(now - start_).count();
  const double per = s / static_cast<double>(done - 1);
  std::fprintf(stderr, "%s%s: prompt %lld/%lld layer steps, %.0f s elapsed, ETA %.0f s%s", tty_ ? "\r" : "",
               tool_.c_str(), static_cast<long long>(done), static_cast<long long>(total), s + per,
               per * static_cast<double>(total - done), tty_ ? "\x1b[K" : "\n");
  std::fflush(stderr);
}

void PrefillProgress::finish() {
  if (reported_ && tty_) std::fputs("\r\x1b[K", stderr);
  reported_ = false;
}

}  // namespace k3
