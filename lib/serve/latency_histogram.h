// A Prometheus histogram of seconds: cumulative counts per upper bound, the
// sum and the count, written as /metrics' text exposition. Observed by the
// HTTP threads as requests end, read by /metrics: one mutex.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace k3::serve {

class LatencyHistogram {
 public:
  // Upper bounds in seconds, increasing; "+Inf" is added.
  explicit LatencyHistogram(std::vector<double> bounds);
  // Bounds for a request's times: 50 ms to 10 min, about 2.5x apart (a
  // prompt continued from a kept state answers in milliseconds, a long
  // prompt from NVMe in minutes).
  static std::vector<double> request_seconds();

  void observe(double seconds);
  // "# HELP", "# TYPE name histogram", name_bucket{le="..."} per bound and
  // +Inf, name_sum, name_count.
  void append_text(std::string& out, const char* name, const char* help) const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mutex_;
  std::vector<uint64_t> counts_;  // per bound, not cumulative; the last is above every bound
  double sum_ = 0;
  uint64_t count_ = 0;
};

}  // namespace k3::serve
