#include "doctor/prefill_probe.h"

#include <cstring>
#include <random>
#include <vector>

#include "kernels/matmul.h"
#include "platform/thread_cpu_time.h"

namespace k3::doctor {

PrefillProbe probe_prefill(double seconds) {
  constexpr size_t kRows = 1024, kCols = 4096, kTokens = 64;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<uint16_t> w(kRows * kCols);
  for (uint16_t& v : w) {
    const float f = normal(rng);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    v = static_cast<uint16_t>(u >> 16);
  }
  std::vector<float> x(kTokens * kCols), y(kTokens * kRows);
  for (float& v : x) v = normal(rng);
  PrefillProbe p;
  const double t0 = thread_cpu_seconds();
  do {
    kernels::matmul_bf16(w.data(), kRows, kCols, x.data(), kTokens, y.data(), nullptr);
    p.flops += 2 * kRows * kCols * kTokens;
    p.cpu_seconds = thread_cpu_seconds() - t0;
  } while (p.cpu_seconds < seconds);
  p.flops_per_s_per_core = p.cpu_seconds > 0 ? static_cast<double>(p.flops) / p.cpu_seconds : 0;
  return p;
}

}  // namespace k3::doctor
