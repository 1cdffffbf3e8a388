// The one wall-clock helper: seconds elapsed on the monotonic clock, for
// timings that are printed or written (prefill and decode seconds, load
// times). steady_clock: a clock set backwards never makes a negative time.
#pragma once

#include <chrono>

namespace k3 {

using SteadyClock = std::chrono::steady_clock;

// Seconds from `start` until now.
inline double seconds_since(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

}  // namespace k3
