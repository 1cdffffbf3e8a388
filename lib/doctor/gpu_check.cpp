// A GPU is worth a line: k3 runs on the CPU and puts only a long prompt's
// matrix products on a GPU (--gpu, the vulkan check), but a machine with one
// (or a cluster of them) can serve the same checkpoint much faster with a GPU
// engine (README "When you outgrow one machine").
#include <filesystem>
#include <string>

#include "doctor/checks.h"

namespace k3::doctor {

namespace {
std::string vendor_name(const std::string& id) {
  if (id.rfind("0x10de", 0) == 0) return "NVIDIA";
  if (id.rfind("0x1002", 0) == 0) return "AMD";
  if (id.rfind("0x8086", 0) == 0) return "Intel";
  return "";
}
}  // namespace

void add_gpu_check(Report& r, const SystemRoot& root) {
  std::string found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(root.path("/sys/class/drm"), ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("card", 0) != 0 || name.find('-') != std::string::npos) continue;
    const std::optional<std::string> vendor = root.read("/sys/class/drm/" + name + "/device/vendor");
    const std::string v = vendor ? vendor_name(*vendor) : "";
    if (v == "NVIDIA" || v == "AMD") found += (found.empty() ? "" : ", ") + v + " (" + name + ")";
  }
  if (found.empty() && root.root() == "/" && std::filesystem::exists("/dev/nvidiactl", ec))
    found = "NVIDIA (/dev/nvidiactl)";
  Check& k = r.add("cpu", "gpu");
  if (found.empty()) {
    k.summary = "no NVIDIA or AMD GPU found";
    k.advice =
        "k3 runs on the CPU and streams from disk; for more speed than the disk gives, see the README section "
        "\"When you outgrow one machine\"";
  } else {
    k.summary = "GPU: " + found + "; k3 uses it for a long prompt's matrix products with --gpu (Vulkan)";
    k.advice =
        "vLLM or SGLang can serve the same checkpoint directory on GPUs, much faster when the weights fit "
        "their memory: README \"When you outgrow one machine\"";
  }
  k.details.set("found", found);
}

}  // namespace k3::doctor
