#include "fetch/transfer_progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "common/byte_format.h"

namespace k3 {

TransferProgress::TransferProgress(std::string prefix, bool tty, double interval_s, int slots, uint64_t total_bytes,
                                   uint64_t total_files)
    : prefix_(std::move(prefix)),
      tty_(tty),
      interval_s_(interval_s),
      total_bytes_(total_bytes),
      total_files_(total_files) {
  for (int i = 0; i < slots; ++i) slots_.push_back(std::make_unique<TransferSlot>());
  start_ = last_print_ = std::chrono::steady_clock::now();
  samples_.emplace_back(start_, 0);
}

std::string TransferProgress::human_seconds(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  long t = std::lround(s);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t / 60) % 60);
  else if (t >= 60) std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%lds", t);
  return buf;
}

std::string TransferProgress::render_line(double rate, bool tty) const {
  uint64_t done = finished_bytes_.load();
  std::string per;
  for (const auto& s : slots_) {
    std::string name;
    {
      std::lock_guard<std::mutex> lock(s->mu);
      name = s->name;
    }
    if (name.empty()) continue;
    uint64_t d = s->done.load(), z = s->size.load();
    done += d;
    if (!tty || per.size() < 120) {
      std::string shown = name.size() > 28 ? "..." + name.substr(name.size() - 25) : name;
      per += " | " + shown + " " + format_bytes(d) + "/" + format_bytes(z);
    }
  }
  double pct = total_bytes_ ? 100.0 * static_cast<double>(done) / static_cast<double>(total_bytes_) : 100.0;
  double eta = rate > 0 ? static_cast<double>(total_bytes_ - std::min(done, total_bytes_)) / rate : NAN;
  char head[256];
  std::snprintf(head, sizeof head, "%s / %s (%.1f%%), %llu/%llu files, %s/s, ETA %s", format_bytes(done).c_str(),
                format_bytes(total_bytes_).c_str(), pct, static_cast<unsigned long long>(finished_files_.load()),
                static_cast<unsigned long long>(total_files_), format_bytes_of(rate).c_str(),
                human_seconds(eta).c_str());
  return prefix_ + head + per;
}

void TransferProgress::log(const std::string& line) {
  std::lock_guard<std::mutex> lock(out_mu_);
  if (tty_ && line_shown_) std::fputs("\r\033[K", stderr);
  std::fputs((prefix_ + line + "\n").c_str(), stderr);
  line_shown_ = false;
  std::fflush(stderr);
}

void TransferProgress::tick(bool force) {
  auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(out_mu_);
  samples_.emplace_back(now, net_bytes_.load());
  while (samples_.size() > 2 && now - samples_.front().first > std::chrono::seconds(20)) samples_.pop_front();
  double since = std::chrono::duration<double>(now - last_print_).count();
  double wanted = tty_ ? 0.5 : interval_s_;
  if (!force && since < wanted) return;
  last_print_ = now;
  double span = std::chrono::duration<double>(now - samples_.front().first).count();
  double rate = span > 0.2 ? static_cast<double>(samples_.back().second - samples_.front().second) / span : 0;
  std::string line = render_line(rate, tty_);
  if (tty_) {
    std::fputs(("\r\033[K" + line).c_str(), stderr);
    line_shown_ = true;
  } else {
    std::fputs((line + "\n").c_str(), stderr);
  }
  std::fflush(stderr);
}

void TransferProgress::finish() {
  std::lock_guard<std::mutex> lock(out_mu_);
  if (tty_ && line_shown_) std::fputs("\r\033[K", stderr);
  line_shown_ = false;
  std::fflush(stderr);
}

}  // namespace k3
