// The Vulkan devices k3's --gpu can use (lib/gpu): each with its memory and
// whether its fma() is fused or emulated (the start-up probe), and a word
// on whether --gpu helps here. Only on the live system: a recorded --root
// holds no devices to open.
#include <string>

#include "common/byte_format.h"
#include "common/error.h"
#include "doctor/checks.h"
#include "gpu/gpu.h"

namespace k3::doctor {

void add_vulkan_check(Report& r, const SystemRoot& root) {
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
  std::string list, helps;
  JsonValue detail;
  for (const GpuDeviceInfo& d : devices) {
    const std::string fma = d.fma_fused ? "fma fused" : d.float64 ? "fma emulated" : "fma not exact";
    list += (list.empty() ? "" : "; ") + std::to_string(d.index) + ": " + d.name + " (" + d.type + ", " +
            format_bytes(d.memory_bytes) + ", " + (d.unusable_reason.empty() ? fma : d.unusable_reason) + ")";
    if (d.unusable_reason.empty() && d.type != "cpu" && helps.empty()) helps = std::to_string(d.index);
    JsonValue o;
    o.set("index", d.index).set("name", d.name).set("type", d.type).set("memory_bytes", d.memory_bytes);
    o.set("fma_fused", d.fma_fused).set("usable", d.unusable_reason.empty());
    detail.push(std::move(o));
  }
  k.summary = devices.empty() ? "no Vulkan device" : "Vulkan: " + list;
  k.advice = !helps.empty() ? "k3-forward --gpu " + helps +
                                  " runs a long prompt's matrix products on that device, with the CPU's bits"
             : devices.empty() ? "--gpu needs a Vulkan driver (Debian: mesa-vulkan-drivers, or the GPU vendor's)"
                               : "only devices that run on the CPU (lavapipe): --gpu gains nothing here";
  k.details.set("devices", std::move(detail));
}

}  // namespace k3::doctor
