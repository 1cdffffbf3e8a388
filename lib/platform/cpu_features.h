// The CPU features the kernels care about, and which SIMD path k3-forward
// will take on this machine.
//
// The kernels use Google Highway with run-time dispatch, so the path is the
// best target that is both compiled in and supported by the CPU. On the live
// machine we ask Highway itself (the same question the kernels' dispatcher
// asks); for a recorded /proc tree we predict it from the cpuinfo flags.
#pragma once

#include <array>
#include <set>
#include <string>

namespace k3 {

class SystemRoot;

struct CpuFeatures {
  std::string model_name;
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512_bf16 = false, avx512_vnni = false;
  int logical_cpus = 0;            // CPUs this process may run on
  std::string flags_source;        // "cpuid" (live) or "cpuinfo" (recorded tree)
  std::string kernel_path;         // Highway target name: "AVX3", "AVX2", "SSE4", ...
  std::string kernel_path_source;  // how kernel_path was found
  std::string simd_best;           // Highway's best target for this CPU (what SIMD kernels could use)
};

// The SIMD flags CpuFeatures holds, by their /proc/cpuinfo name (also their
// name in k3-doctor's JSON), in the order reports list them.
struct CpuFlag {
  const char* name;
  bool CpuFeatures::*member;
};
inline constexpr std::array<CpuFlag, 9> kCpuFlags{{{"avx2", &CpuFeatures::avx2},
                                                   {"fma", &CpuFeatures::fma},
                                                   {"f16c", &CpuFeatures::f16c},
                                                   {"avx512f", &CpuFeatures::avx512f},
                                                   {"avx512bw", &CpuFeatures::avx512bw},
                                                   {"avx512vl", &CpuFeatures::avx512vl},
                                                   {"avx512dq", &CpuFeatures::avx512dq},
                                                   {"avx512_bf16", &CpuFeatures::avx512_bf16},
                                                   {"avx512_vnni", &CpuFeatures::avx512_vnni}}};

// The `flags` set of the first processor in /proc/cpuinfo.
std::set<std::string> parse_cpuinfo_flags(const std::string& cpuinfo);
// Number of "processor" entries in /proc/cpuinfo.
int count_cpuinfo_processors(const std::string& cpuinfo);
// "model name" of the first processor ("" when absent).
std::string parse_cpuinfo_model_name(const std::string& cpuinfo);

// Highway's best dispatch target for a CPU with these flags, among the
// targets Highway 1.0 compiles by default (AVX3, AVX2, SSE4, SSSE3, EMU128).
std::string predict_kernel_path(const std::set<std::string>& flags);

// Live machine: cpuid + Highway; recorded root: cpuinfo + prediction.
// `live_kernel_path` is the target the kernels say they dispatch to
// (kernels::kernel_target_name(); the kernels sit above this layer, so the
// caller asks them); without it the live path is Highway's best target.
CpuFeatures detect_cpu(const SystemRoot& root, const char* live_kernel_path = nullptr);

}  // namespace k3
