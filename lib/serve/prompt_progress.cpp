#include "serve/prompt_progress.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "serve/slot_scheduler.h"

namespace k3::serve {

namespace {

// 10 s; K3_SERVE_PROGRESS_MS sets it (tests: a line at every pass with 0).
double log_every_seconds() {
  static const double seconds = [] {
    const char* v = std::getenv("K3_SERVE_PROGRESS_MS");
    return v && *v ? std::strtod(v, nullptr) / 1000 : 10.0;
  }();
  return seconds;
}

}  // namespace

std::string grouped(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  for (size_t i = digits.size(); i > 3; i -= 3) digits.insert(i - 3, ",");
  return (n < 0 ? "-" : "") + digits;
}

std::string time_left_text(double seconds) {
  const auto s = static_cast<int64_t>(std::ceil(std::max(0.0, seconds)));
  if (s < 60) return std::to_string(s) + " s";
  const int64_t minutes = (s + 30) / 60;  // to the nearest minute
  if (minutes < 60) return std::to_string(minutes) + " min";
  char text[48];
  std::snprintf(text, sizeof text, "%lld h %02lld min", static_cast<long long>(minutes / 60),
                static_cast<long long>(minutes % 60));
  return text;
}

std::optional<double> prompt_seconds_left(int64_t from, int64_t done, int64_t total, double elapsed) {
  if (done <= from || elapsed <= 0) return std::nullopt;
  return static_cast<double>(total - done) * elapsed / static_cast<double>(done - from);
}

std::string prompt_progress_text(int64_t done, int64_t total, std::optional<double> seconds_left) {
  std::string text = "prompt " + grouped(done) + " / " + grouped(total);
  if (seconds_left) text += ", " + time_left_text(*seconds_left) + " left";
  return text;
}

void log_prompt_progress(Job& job) {
  const auto [done, total] = job.prefill();
  if (done >= total) return;
  const double elapsed = std::chrono::duration<double>(Job::Clock::now() - job.admitted_at()).count();
  if (elapsed < log_every_seconds() * (job.progress_lines() + 1)) return;
  job.count_progress_line();
  const std::string text =
      "k3-serve: " + prompt_progress_text(done, total, prompt_seconds_left(job.cached_tokens(), done, total, elapsed));
  std::fprintf(stderr, "%s\n", text.c_str());
}

}  // namespace k3::serve
