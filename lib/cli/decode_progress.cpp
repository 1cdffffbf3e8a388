#include "cli/decode_progress.h"

#include "common/progress_meter.h"

namespace k3 {

DecodeProgress::DecodeProgress(std::string tool, int64_t total, bool on_terminal, std::FILE* out,
                               std::chrono::duration<double> interval)
    : tool_(std::move(tool)), total_(total), on_(on_terminal && total > 0), out_(out), interval_(interval) {}

DecodeProgress::DecodeProgress(std::string tool, int64_t total)
    : DecodeProgress(std::move(tool), total, progress_on_terminal()) {}

std::string DecodeProgress::line(const std::string& tool, int64_t done, int64_t total, double per) {
  char buf[160];
  if (per <= 0) {
    std::snprintf(buf, sizeof buf, "%s: token %lld/%lld", tool.c_str(), static_cast<long long>(done),
                  static_cast<long long>(total));
  } else {
    std::snprintf(buf, sizeof buf, "%s: token %lld/%lld, %.3f s/token, ETA %.0f s", tool.c_str(),
                  static_cast<long long>(done), static_cast<long long>(total), per,
                  per * static_cast<double>(total - done));
  }
  return buf;
}

void DecodeProgress::update(int64_t done) {
  if (!on_) return;
  const auto now = std::chrono::steady_clock::now();
  if (first_done_ < 0) {
    first_ = now;
    first_done_ = done;
  } else if (now - last_ < interval_) {
    return;
  }
  last_ = now;
  // The rate counts from the first token seen (the ones before it waited on the prompt).
  const double seconds = std::chrono::duration<double>(now - first_).count();
  const double per = done > first_done_ ? seconds / static_cast<double>(done - first_done_) : 0;
  std::fprintf(out_, "\r%s\x1b[K", line(tool_, done, total_, per).c_str());
  std::fflush(out_);
  shown_ = true;
}

void DecodeProgress::finish() {
  if (!shown_) return;
  std::fputs("\r\x1b[K", out_);
  std::fflush(out_);
  shown_ = false;
}

}  // namespace k3
