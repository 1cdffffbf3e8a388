#include "cli/decode_progress.h"

#include <sys/stat.h>
#include <unistd.h>

#include "common/progress_meter.h"
#include "common/rate_format.h"
#include "common/terminal_line.h"

namespace k3 {

namespace {
// xterm's title stack: push the user's title, pop it back at the end
// (terminals without the stack ignore both).
constexpr const char* kPushTitle = "\x1b[22;2t";
constexpr const char* kPopTitle = "\x1b[23;2t";
}  // namespace

DecodeProgress::DecodeProgress(std::string tool, int64_t total, Mode mode, std::FILE* out,
                               std::chrono::duration<double> interval)
    : tool_(std::move(tool)), total_(total), mode_(total > 0 ? mode : Mode::kOff), out_(out), interval_(interval) {}

DecodeProgress::DecodeProgress(std::string tool, int64_t total) : DecodeProgress(std::move(tool), total, mode_for(1)) {}

DecodeProgress::Mode DecodeProgress::mode_for(int stdout_fd) {
  if (!progress_on_terminal()) return Mode::kOff;
  struct stat st {};
  if (::fstat(stdout_fd, &st) != 0) return Mode::kTitle;
  const bool file_or_device = S_ISREG(st.st_mode) || (S_ISCHR(st.st_mode) && ::isatty(stdout_fd) != 1);
  return file_or_device ? Mode::kLine : Mode::kTitle;
}

std::string DecodeProgress::line(const std::string& tool, int64_t done, int64_t total, double per) {
  char buf[160];
  if (per <= 0) {
    std::snprintf(buf, sizeof buf, "%s: token %lld/%lld", tool.c_str(), static_cast<long long>(done),
                  static_cast<long long>(total));
  } else {
    std::snprintf(buf, sizeof buf, "%s: token %lld/%lld, %s, ETA %.0f s", tool.c_str(), static_cast<long long>(done),
                  static_cast<long long>(total), seconds_per_token(per, 1).c_str(),
                  per * static_cast<double>(total - done));
  }
  return buf;
}

void DecodeProgress::update(int64_t done) {
  if (mode_ == Mode::kOff) return;
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
  const std::string figures = line(tool_, done, total_, per);
  if (mode_ == Mode::kLine) std::fprintf(out_, "\r%s\x1b[K", figures.c_str());
  else std::fprintf(out_, "%s%s", shown_ ? "" : kPushTitle, title_sequence(figures).c_str());
  std::fflush(out_);
  shown_ = true;
}

void DecodeProgress::finish() {
  if (!shown_) return;
  std::fputs(mode_ == Mode::kLine ? "\r\x1b[K" : kPopTitle, out_);
  std::fflush(out_);
  shown_ = false;
}

}  // namespace k3
