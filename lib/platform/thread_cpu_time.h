// CPU time the calling thread has used, in seconds: what the probes and rates
// measure, because on a busy machine wall time also counts the waiting.
#pragma once

#include <time.h>

namespace k3 {

inline double thread_cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace k3
