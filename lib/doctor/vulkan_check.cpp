// The Vulkan devices k3's --gpu can use (lib/gpu): each with its memory,
// whether its fma() is fused or emulated (the start-up probe) and its FP32
// rate (a short probe), and --gpu INDEX recommended where a device beats
// this CPU's prefill rate, with the first-token forecast both ways
// (gpu_advice.h). Only on the live system: a recorded --root holds no
// devices to open.
#include <string>

#include "common/byte_format.h"
#include "common/error.h"
#include "doctor/checks.h"
#include "doctor/gpu_advice.h"
#include "gpu/gpu.h"

namespace k3::doctor {

namespace {

std::string describe_device(const GpuDeviceInfo& d) {
  const std::string fma = d.fma_fused ? "fma fused (fused: yes)"
                          : d.float64 ? "fma emulated (fused: no)"
                                      : "fma not exact (fused: no)";
  return std::to_string(d.index) + ": " + d.name + " (" + d.type + ", " + format_bytes(d.memory_bytes) + ", " +
         (d.unusable_reason.empty() ? fma : d.unusable_reason) + ", " + format_figure("%.1f", d.fp32_gflops) +
         " GFLOP/s FP32)";
}

}  // namespace

void add_vulkan_check(Report& r, const SystemRoot& root, const FirstTokenForecast& cpu, uint64_t tokens,
                      bool cpu_measured) {
  if (root.root() != "/") return;
  Check& k = r.add("cpu", "vulkan");
  if (!gpu_built()) {
    k.summary = "no Vulkan path in this build";
    k.advice = gpu_not_built_reason();
    return;
  }
  std::vector<GpuDeviceInfo> devices;
  try {
    devices = list_gpu_devices();
  } catch (const Error& e) {
    k.status = Status::kWarn;
    k.summary = "Vulkan devices could not be listed";
    k.advice = e.message();
    return;
  }
  std::string list, reasons;
  std::vector<GpuVerdict> verdicts;
  JsonValue detail;
  for (const GpuDeviceInfo& d : devices) {
    verdicts.push_back(judge_gpu_device(d, cpu.flops_per_s, cpu.read_seconds, cpu.compute_seconds));
    const GpuVerdict& v = verdicts.back();
    list += (list.empty() ? "" : "; ") + describe_device(d);
    if (!v.recommended) reasons += (reasons.empty() ? "" : "; ") + std::to_string(d.index) + ": " + v.why_not;
    JsonValue o;
    o.set("index", d.index).set("name", d.name).set("type", d.type).set("memory_bytes", d.memory_bytes);
    o.set("fma_fused", d.fma_fused).set("usable", d.unusable_reason.empty()).set("fp32_gflops", d.fp32_gflops);
    o.set("native_shaders", d.native_shaders).set("recommended", v.recommended).set("why_not", v.why_not);
    if (v.recommended) o.set("first_token_seconds", v.first_token_seconds);
    detail.push(std::move(o));
  }
  k.summary = devices.empty() ? "no Vulkan device" : "Vulkan: " + list;
  const int best = best_gpu_device(devices, verdicts);
  const std::string cpu_rate = format_figure("%.1f", cpu.flops_per_s / 1e9) + " GFLOP/s" +
                               (cpu_measured ? " (measured)" : " (ASSUMED: --no-probe)");
  if (best >= 0) {
    const GpuDeviceInfo& d = devices[static_cast<size_t>(best)];
    k.advice = "k3-forward --gpu " + std::to_string(d.index) + ": its " + format_figure("%.0f", d.fp32_gflops) +
               " GFLOP/s against this CPU's " + cpu_rate + " put a " + std::to_string(tokens) +
               "-token prompt's first token at about " +
               format_figure("%.0f s", verdicts[static_cast<size_t>(best)].first_token_seconds) + " instead of " +
               format_figure("%.0f s", cpu.seconds()) + " (forecasts)";
  } else if (devices.empty()) {
    k.advice = "--gpu needs a Vulkan driver (Debian: mesa-vulkan-drivers, or the GPU vendor's)";
  } else {
    k.advice =
        "--gpu gains nothing here, no device is recommended (" + reasons + "; this CPU's prefill: " + cpu_rate + ")";
  }
  k.details.set("devices", std::move(detail))
      .set("cpu_flops_per_s", cpu.flops_per_s)
      .set("prompt_tokens", tokens)
      .set("cpu_first_token_seconds", cpu.seconds())
      .set("recommended_device", best >= 0 ? devices[static_cast<size_t>(best)].index : -1);
}

}  // namespace k3::doctor
