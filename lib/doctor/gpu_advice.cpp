#include "doctor/gpu_advice.h"

#include "doctor/report.h"

namespace k3::doctor {

GpuVerdict judge_gpu_device(const GpuDeviceInfo& d, double cpu_flops_per_s, double read_seconds,
                            double cpu_compute_seconds) {
  GpuVerdict v;
  const double flops_per_s = d.fp32_gflops * 1e9;
  if (!d.unusable_reason.empty()) {
    v.why_not = d.unusable_reason;
  } else if (!d.fma_fused) {
    v.why_not = "its fma() is not fused, so k3 emulates it exactly: several operations a multiply-add, slow";
  } else if (d.type == "cpu") {
    v.why_not = "it runs on this CPU's own cores";
  } else if (flops_per_s <= cpu_flops_per_s) {
    v.why_not = "its FP32 rate (" + format_figure("%.1f", d.fp32_gflops) + " GFLOP/s) does not beat this CPU's (" +
                format_figure("%.1f", cpu_flops_per_s / 1e9) + " GFLOP/s)";
  } else {
    v.recommended = true;
    v.first_token_seconds = read_seconds + cpu_compute_seconds * cpu_flops_per_s / flops_per_s;
  }
  return v;
}

int best_gpu_device(const std::vector<GpuDeviceInfo>& devices, const std::vector<GpuVerdict>& verdicts) {
  int best = -1;
  for (size_t i = 0; i < devices.size() && i < verdicts.size(); ++i)
    if (verdicts[i].recommended && (best < 0 || devices[i].fp32_gflops > devices[best].fp32_gflops))
      best = static_cast<int>(i);
  return best;
}

}  // namespace k3::doctor
