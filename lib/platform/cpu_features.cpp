#include "platform/cpu_features.h"

#include <sched.h>
#include <unistd.h>

#include <hwy/targets.h>

#include <sstream>

#include "platform/system_root.h"

namespace k3 {

namespace {
std::string value_after_colon(const std::string& line) {
  size_t c = line.find(':');
  if (c == std::string::npos) return "";
  size_t b = line.find_first_not_of(" \t", c + 1);
  return b == std::string::npos ? "" : line.substr(b);
}

std::string key_before_colon(const std::string& line) {
  size_t c = line.find(':');
  std::string k = line.substr(0, c);
  while (!k.empty() && (k.back() == ' ' || k.back() == '\t')) k.pop_back();
  return k;
}

// The best target Highway dispatches to here, from the targets compiled
// into this binary with the default HWY_TARGETS (what the kernels use).
std::string highway_best_target() {
  int64_t targets = hwy::SupportedTargets() & HWY_TARGETS;
  if (targets == 0) return "none";
  int64_t best = targets & -targets;  // lower bit = better target
  return hwy::TargetName(best);
}
}  // namespace

std::set<std::string> parse_cpuinfo_flags(const std::string& cpuinfo) {
  std::set<std::string> flags;
  std::istringstream in(cpuinfo);
  std::string line;
  while (std::getline(in, line)) {
    std::string key = key_before_colon(line);
    if (key != "flags" && key != "Features") continue;  // x86 / arm64
    std::istringstream words(value_after_colon(line));
    std::string w;
    while (words >> w) flags.insert(w);
    break;  // the first processor speaks for all (hybrid cores share ISA flags)
  }
  return flags;
}

int count_cpuinfo_processors(const std::string& cpuinfo) {
  std::istringstream in(cpuinfo);
  std::string line;
  int n = 0;
  while (std::getline(in, line))
    if (key_before_colon(line) == "processor" && line.find(':') != std::string::npos) ++n;
  return n;
}

std::string parse_cpuinfo_model_name(const std::string& cpuinfo) {
  std::istringstream in(cpuinfo);
  std::string line;
  while (std::getline(in, line))
    if (key_before_colon(line) == "model name") return value_after_colon(line);
  return "";
}

std::string predict_kernel_path(const std::set<std::string>& f) {
  auto has = [&](const char* x) { return f.count(x) > 0; };
  const bool avx2 = has("avx2") && has("fma") && has("f16c") && has("bmi1") && has("bmi2");
  const bool sse4 = has("sse4_1") && has("sse4_2") && has("ssse3") && has("pclmulqdq") && has("aes");
  if (avx2 && sse4 && has("avx512f") && has("avx512vl") && has("avx512dq") && has("avx512bw")) return "AVX3";
  if (avx2 && sse4) return "AVX2";
  if (sse4) return "SSE4";
  if (has("ssse3")) return "SSSE3";
  return "EMU128";
}

CpuFeatures detect_cpu(const SystemRoot& root, const char* live_kernel_path) {
  CpuFeatures c;
  std::string cpuinfo = root.read("/proc/cpuinfo").value_or("");
  c.model_name = parse_cpuinfo_model_name(cpuinfo);
  std::set<std::string> flags = parse_cpuinfo_flags(cpuinfo);
  if (root.is_live()) {
    // cpuid (via the compiler's builtins, which also check that the OS
    // saves the wide registers) is what the code can actually execute.
    __builtin_cpu_init();
    c.avx2 = __builtin_cpu_supports("avx2");
    c.fma = __builtin_cpu_supports("fma");
    c.f16c = flags.count("f16c") > 0;  // no builtin name for F16C in GCC 12
    c.avx512f = __builtin_cpu_supports("avx512f");
    c.avx512bw = __builtin_cpu_supports("avx512bw");
    c.avx512vl = __builtin_cpu_supports("avx512vl");
    c.avx512dq = __builtin_cpu_supports("avx512dq");
    c.avx512_bf16 = __builtin_cpu_supports("avx512bf16");
    c.avx512_vnni = __builtin_cpu_supports("avx512vnni");
    c.flags_source = "cpuid";
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) c.logical_cpus = CPU_COUNT(&set);
    if (c.logical_cpus <= 0) c.logical_cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
    c.simd_best = highway_best_target();
    // The kernels report the path they dispatch to; ask them rather than
    // assume they use every target Highway offers.
    if (live_kernel_path) {
      c.kernel_path = live_kernel_path;
      c.kernel_path_source = "as reported by the kernels";
    } else {
      c.kernel_path = c.simd_best;
      c.kernel_path_source = "Highway's best target for this CPU";
    }
  } else {
    for (const CpuFlag& f : kCpuFlags) c.*f.member = flags.count(f.name) > 0;
    c.flags_source = "cpuinfo";
    c.logical_cpus = count_cpuinfo_processors(cpuinfo);
    c.kernel_path = predict_kernel_path(flags);
    c.simd_best = c.kernel_path;
    c.kernel_path_source = "predicted from the recorded cpuinfo flags";
  }
  return c;
}

}  // namespace k3
