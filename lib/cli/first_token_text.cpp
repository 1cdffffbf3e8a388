#include "cli/first_token_text.h"

#include <thread>

#include "common/append_printf.h"
#include "doctor/doctor.h"
#include "doctor/prefill_probe.h"
#include "planning/first_token_forecast.h"

namespace k3 {

FirstTokenRates first_token_rates(double read_gbps, int threads) {
  FirstTokenRates r;
  r.read_bytes_per_s = read_gbps > 0 ? read_gbps * 1e9 : doctor::kAssumedBandwidth;
  r.read_how = read_gbps > 0 ? "--read-gbps" : "assumed: pass k3-doctor's measured figure with --read-gbps";
  const int n = threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const doctor::PrefillProbe probe = doctor::probe_prefill(0.2);
  r.flops_per_s = probe.flops_per_s_per_core * n;
  append_printf(r.flops_how, "measured here: %.1f GFLOP/s a core x %d thread%s", probe.flops_per_s_per_core / 1e9, n,
                n == 1 ? "" : "s");
  return r;
}

std::string first_token_text(const ModelConfig& config, const MemoryPlan& plan, uint64_t tokens,
                             const FirstTokenRates& rates) {
  const FirstTokenForecast f = forecast_first_token(config, plan, tokens, rates.read_bytes_per_s, rates.flops_per_s);
  std::string o = "time to first token (forecast), a prompt of " + describe_first_token(f, plan);
  append_printf(o, "; reads at %.2f GB/s (%s), compute at %.1f GFLOP/s (%s)", rates.read_bytes_per_s / 1e9,
                rates.read_how.c_str(), rates.flops_per_s / 1e9, rates.flops_how.c_str());
  return o;
}

}  // namespace k3
