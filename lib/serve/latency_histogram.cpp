#include "serve/latency_histogram.h"

#include <algorithm>
#include <cstdio>

namespace k3::serve {

LatencyHistogram::LatencyHistogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

std::vector<double> LatencyHistogram::request_seconds() {
  return {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 60, 120, 300, 600};
}

void LatencyHistogram::observe(double seconds) {
  // Prometheus' buckets are "less than or equal": a time on a bound counts in it.
  const auto at = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), seconds) - bounds_.begin());
  std::lock_guard<std::mutex> lock(mutex_);
  ++counts_[at];
  sum_ += seconds;
  ++count_;
}

void LatencyHistogram::append_text(std::string& out, const char* name, const char* help) const {
  std::lock_guard<std::mutex> lock(mutex_);
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " histogram\n";
  char line[160];
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    if (i < bounds_.size())
      std::snprintf(line, sizeof line, "%s_bucket{le=\"%g\"} %llu\n", name, bounds_[i],
                    static_cast<unsigned long long>(cumulative));
    else
      std::snprintf(line, sizeof line, "%s_bucket{le=\"+Inf\"} %llu\n", name,
                    static_cast<unsigned long long>(cumulative));
    out += line;
  }
  std::snprintf(line, sizeof line, "%s_sum %.17g\n%s_count %llu\n", name, sum_, name,
                static_cast<unsigned long long>(count_));
  out += line;
}

}  // namespace k3::serve
