#include "cli/prefill_progress.h"

#include <unistd.h>

#include <cstdio>

#include "cli/interrupt.h"
#include "common/error.h"

namespace k3 {

PrefillProgress::PrefillProgress(std::string tool)
    : tool_(std::move(tool)), start_(std::chrono::steady_clock::now()), last_(start_), tty_(::isatty(2) != 0) {}

void PrefillProgress::operator()(int64_t done, int64_t total) {
  if (interrupted())
    throw Error(ExitCode::kInterrupted, "interrupted while running the prompt; nothing was generated");
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_).count() < 2.0) return;
  last_ = now;
  reported_ = true;
  const double s = std::chrono::duration<double>(now - start_).count();
  const double eta = s / static_cast<double>(done) * static_cast<double>(total - done);
  std::fprintf(stderr, "%s%s: prompt %lld/%lld layer steps, %.0f s elapsed, ETA %.0f s%s", tty_ ? "\r" : "",
               tool_.c_str(), static_cast<long long>(done), static_cast<long long>(total), s, eta, tty_ ? "" : "\n");
}

void PrefillProgress::finish() {
  if (reported_ && tty_) std::fprintf(stderr, "\n");
}

}  // namespace k3
