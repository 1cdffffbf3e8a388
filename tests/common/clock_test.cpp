// seconds_since: the monotonic seconds from a point to now, the one helper
// every printed timing uses.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "common/clock.h"

namespace k3 {
namespace {

TEST(Clock, SecondsSinceCountsElapsedTime) {
  const auto start = SteadyClock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const double s = seconds_since(start);
  EXPECT_GE(s, 0.030);
  EXPECT_LT(s, 30.0);                  // bounded: a loaded machine, not a wrong unit
  EXPECT_GE(seconds_since(start), s);  // monotonic
  EXPECT_NEAR(seconds_since(SteadyClock::now() - std::chrono::seconds(90)), 90.0, 5.0);
}

}  // namespace
}  // namespace k3
