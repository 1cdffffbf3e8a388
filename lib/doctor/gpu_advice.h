// Whether --gpu helps on a device: its probed FP32 rate against this CPU's
// prefill rate, and the time to the first token both ways (forecasts). A
// device is not recommended where it must emulate fma (exact, but several
// integer and double operations for each multiply-add: slow), where it runs
// on this CPU's own cores, or where its rate does not beat the CPU's.
#pragma once

#include <string>
#include <vector>

#include "gpu/gpu.h"

namespace k3::doctor {

struct GpuVerdict {
  bool recommended = false;
  std::string why_not;             // empty where recommended
  double first_token_seconds = 0;  // the forecast with the device (0 where not recommended)
};

// `cpu_flops_per_s`: the CPU's prefill rate (all the threads a run uses);
// `read_seconds` and `cpu_compute_seconds`: the first-token forecast's
// parts on the CPU (planning/first_token_forecast.h). With the device the
// reading stays and the compute scales by the rates: an optimistic figure,
// the device's peak fma rate against the CPU's measured products.
GpuVerdict judge_gpu_device(const GpuDeviceInfo& device, double cpu_flops_per_s, double read_seconds,
                            double cpu_compute_seconds);

// The position in `devices` of the one to recommend (the fastest recommended), or -1.
int best_gpu_device(const std::vector<GpuDeviceInfo>& devices, const std::vector<GpuVerdict>& verdicts);

}  // namespace k3::doctor
