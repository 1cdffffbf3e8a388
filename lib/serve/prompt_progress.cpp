#include "serve/prompt_progress.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <tuple>

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

std::optional<double> prompt_seconds_left(int64_t from, double done, int64_t total, double elapsed) {
  if (done <= static_cast<double>(from) || elapsed <= 0) return std::nullopt;
  return (static_cast<double>(total) - done) * elapsed / (done - static_cast<double>(from));
}

std::string prompt_progress_text(int64_t done, int64_t total, std::optional<double> seconds_left) {
  std::string text = "prompt " + grouped(done) + " / " + grouped(total);
  if (seconds_left) text += ", " + time_left_text(*seconds_left) + " left";
  return text;
}

std::string pass_layer_text(int64_t done, int64_t total, int layers) {
  if (total <= 0 || layers <= 0) return "";
  const int64_t per_layer = std::max<int64_t>(1, total / layers);  // steps of a layer
  const int64_t layer = std::clamp<int64_t>((done + per_layer - 1) / per_layer, 1, layers);
  return "layer " + std::to_string(layer) + " of " + std::to_string(layers);
}

PromptProgress prompt_progress(const Job& job) {
  PromptProgress p;
  std::tie(p.done, p.total) = job.prefill();
  const Job::PassProgress pass = job.prefill_pass();
  p.done_exact = static_cast<double>(p.done);
  if (pass.ids > 0 && pass.total > 0) {
    p.done_exact += static_cast<double>(pass.ids) * static_cast<double>(pass.done) / static_cast<double>(pass.total);
    p.layer = pass_layer_text(pass.done, pass.total, pass.layers);
  }
  const double elapsed = std::chrono::duration<double>(Job::Clock::now() - job.admitted_at()).count();
  const auto from = static_cast<double>(job.cached_tokens());
  if (elapsed > 0 && p.done_exact > from) p.ids_per_second = (p.done_exact - from) / elapsed;
  p.seconds_left = prompt_seconds_left(job.cached_tokens(), p.done_exact, p.total, elapsed);
  return p;
}

std::string prompt_progress_text(const PromptProgress& p) {
  std::string text = "prompt " + grouped(p.done) + " / " + grouped(p.total);
  if (!p.layer.empty()) text += ", " + p.layer;
  if (p.ids_per_second) text += ", " + grouped(static_cast<int64_t>(std::lround(*p.ids_per_second))) + " tokens/s";
  if (p.seconds_left) text += ", " + time_left_text(*p.seconds_left) + " left";
  return text;
}

void log_prompt_progress(Job& job) {
  const auto [done, total] = job.prefill();
  if (done >= total) return;
  const double elapsed = std::chrono::duration<double>(Job::Clock::now() - job.admitted_at()).count();
  if (elapsed < log_every_seconds() * (job.progress_lines() + 1)) return;
  job.count_progress_line();
  const std::string text = "k3-serve: " + prompt_progress_text(prompt_progress(job));
  std::fprintf(stderr, "%s\n", text.c_str());
}

std::string prefill_note(const Job& job, int64_t& sent) {
  const int64_t version = job.progress_version();
  const PromptProgress p = prompt_progress(job);
  if (p.total == 0 || version == sent) return "";
  sent = version;
  std::string note = ": prefill " + std::to_string(p.done) + "/" + std::to_string(p.total) + "\n";
  if (!p.layer.empty()) {
    std::string rest = prompt_progress_text(p);  // "prompt D / T, layer ..., ..."
    note += ": " + rest.substr(rest.find(", ") + 2) + "\n";
  }
  return note + "\n";
}

}  // namespace k3::serve
