// The time-to-first-token forecast as --plan and --list-presets print it
// (planning/first_token_forecast.h has the formula): the disk rate given
// with --read-gbps or k3-doctor's assumed one, the compute rate measured
// here on one core (doctor/prefill_probe.h) times the threads a run uses.
#pragma once

#include <cstdint>
#include <string>

#include "model/config.h"
#include "planning/memory_plan.h"

namespace k3 {

// The rates a forecast uses, and how each was obtained, for the text.
struct FirstTokenRates {
  double read_bytes_per_s = 0;
  std::string read_how;  // "--read-gbps" or "assumed: ..."
  double flops_per_s = 0;
  std::string flops_how;  // "measured here: 41.2 GFLOP/s a core x 2 threads"
};

// Measures the CPU (~0.2 s on one core); `read_gbps` <= 0: the assumed rate;
// `threads` 0: every core.
FirstTokenRates first_token_rates(double read_gbps, int threads);

// "time to first token (forecast), a prompt of 4000 tokens: ...; reads at
// 2.00 GB/s (assumed: ...), compute at ... (measured here: ...)".
std::string first_token_text(const ModelConfig& config, const MemoryPlan& plan, uint64_t tokens,
                             const FirstTokenRates& rates);

}  // namespace k3
