// How fast this CPU multiplies a prefill's rows by BF16 weights: a [1024 x
// 4096] BF16 matrix times 64 rows (a sub-batch of a prompt) on one thread,
// timed by that thread's CPU time so other load on the machine does not
// count against it. The time-to-first-token forecast
// (planning/first_token_forecast.h) turns it into prompt tokens a second.
#pragma once

#include <cstdint>

namespace k3::doctor {

struct PrefillProbe {
  double flops_per_s_per_core = 0;
  uint64_t flops = 0;
  double cpu_seconds = 0;
};

// Multiplies for ~`seconds` of CPU time (at least one product).
PrefillProbe probe_prefill(double seconds);

// What k3-doctor --no-probe assumes instead (one core of a recent x86 CPU
// running these kernels on prefill rows), labelled as assumed where used.
inline constexpr double kAssumedFlopsPerCore = 50e9;

}  // namespace k3::doctor
