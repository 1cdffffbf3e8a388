// Progress of a multi-file download on stderr: on a terminal one line
// rewritten in place (total and per-transfer bytes, rate, ETA); otherwise a
// plain line every few seconds, so logs stay readable. Log lines from the
// workers go through here too so they never interleave with the meter.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace k3 {

// One download job's current file (written by its worker, read by the meter).
struct TransferSlot {
  std::mutex mu;
  std::string name;  // empty: idle
  std::atomic<uint64_t> size{0};
  std::atomic<uint64_t> done{0};
};

class TransferProgress {
 public:
  TransferProgress(std::string prefix, bool tty, double interval_s, int slots, uint64_t total_bytes,
                   uint64_t total_files);

  TransferSlot& slot(int i) { return *slots_[i]; }
  void add_network_bytes(uint64_t n) { net_bytes_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t network_bytes() const { return net_bytes_.load(); }
  void file_finished(uint64_t size) { add_finished(size, 1); }
  void add_finished(uint64_t bytes, uint64_t files) {
    finished_bytes_.fetch_add(bytes);
    finished_files_.fetch_add(files);
  }

  // Prints a message on its own line (clearing the meter first on a TTY).
  void log(const std::string& line);
  // Called periodically by the owner; prints when the interval has passed.
  void tick(bool force = false);
  // Clears the meter line (on a TTY) before the final summary.
  void finish();

  static std::string human_seconds(double s);  // "2h05m", "4m10s", "12s"

 private:
  std::string render_line(double rate, bool tty) const;

  std::string prefix_;
  bool tty_;
  double interval_s_;
  uint64_t total_bytes_, total_files_;
  std::vector<std::unique_ptr<TransferSlot>> slots_;
  std::atomic<uint64_t> net_bytes_{0}, finished_bytes_{0}, finished_files_{0};
  std::mutex out_mu_;
  std::chrono::steady_clock::time_point start_, last_print_;
  // (time, network bytes) samples over the last ~20 s for the rate.
  std::deque<std::pair<std::chrono::steady_clock::time_point, uint64_t>> samples_;
  bool line_shown_ = false;
};

}  // namespace k3
