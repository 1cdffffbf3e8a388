// /metrics' histograms in Prometheus' text format: cumulative "le" buckets
// (a value on a bound counts in it), +Inf, the sum and the count.
#include "serve/latency_histogram.h"

#include <gtest/gtest.h>

#include <string>

namespace k3::serve {
namespace {

TEST(LatencyHistogram, CumulativeBucketsSumAndCount) {
  LatencyHistogram h({0.1, 1, 10});
  for (double s : {0.05, 0.1, 0.5, 3.0, 20.0}) h.observe(s);
  std::string text;
  h.append_text(text, "k3_x_seconds", "Seconds of x.");
  EXPECT_EQ(text,
            "# HELP k3_x_seconds Seconds of x.\n"
            "# TYPE k3_x_seconds histogram\n"
            "k3_x_seconds_bucket{le=\"0.1\"} 2\n"
            "k3_x_seconds_bucket{le=\"1\"} 3\n"
            "k3_x_seconds_bucket{le=\"10\"} 4\n"
            "k3_x_seconds_bucket{le=\"+Inf\"} 5\n"
            "k3_x_seconds_sum 23.649999999999999\n"
            "k3_x_seconds_count 5\n");
}

TEST(LatencyHistogram, EmptyHasZeroBuckets) {
  LatencyHistogram h(LatencyHistogram::request_seconds());
  std::string text;
  h.append_text(text, "k3_y", "Y.");
  EXPECT_NE(text.find("k3_y_bucket{le=\"0.05\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("k3_y_bucket{le=\"600\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("k3_y_bucket{le=\"+Inf\"} 0\nk3_y_sum 0\nk3_y_count 0\n"), std::string::npos);
}

}  // namespace
}  // namespace k3::serve
