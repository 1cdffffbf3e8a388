#include <string>

#include "doctor/checks.h"

namespace k3::doctor {

namespace {
const char* yn(bool b) { return b ? "yes" : "no"; }
}  // namespace

void add_cpu_checks(Report& r, const CpuFeatures& c) {
  {
    Check& k = r.add("cpu", "simd");
    const bool base = c.avx2 && c.fma && c.f16c;
    const bool avx512 = c.avx512f && c.avx512bw && c.avx512vl;
    k.status = base ? Status::kOk : Status::kWarn;
    k.summary = std::string("AVX2 ") + yn(c.avx2) + ", FMA " + yn(c.fma) + ", F16C " + yn(c.f16c) +
                ", AVX-512F/BW/VL " + yn(c.avx512f) + "/" + yn(c.avx512bw) + "/" + yn(c.avx512vl) + ", AVX512_BF16 " +
                yn(c.avx512_bf16) + ", AVX512_VNNI " + yn(c.avx512_vnni) + " (" + c.flags_source + ")";
    if (!base)
      k.advice =
          "without AVX2+FMA+F16C the BF16 matrix products run several times slower; prefer an x86-64-v3 or newer CPU";
    else if (!avx512) k.advice = "AVX2 is enough; AVX-512 would roughly double matrix-product throughput in prefill";
    else k.advice = "all the SIMD features the kernels can use are present";
    k.details.set("model_name", c.model_name).set("source", c.flags_source);
    for (const CpuFlag& f : kCpuFlags) k.details.set(f.name, c.*f.member);
  }
  {
    Check& k = r.add("cpu", "kernel_path");
    const std::string& p = c.kernel_path;
    const bool simd = p.rfind("AVX", 0) == 0 || p.rfind("SVE", 0) == 0 || p.rfind("NEON", 0) == 0;
    k.status = simd ? Status::kOk : Status::kWarn;
    k.summary = "k3-forward's kernels will take the " + p + " path (" + c.kernel_path_source + ")";
    if (!c.simd_best.empty() && c.simd_best != p) k.summary += "; Highway's best target here is " + c.simd_best;
    k.advice = simd ? "SIMD kernels in use"
                    : "the matrix products run without wide SIMD: decode will be compute-bound and slower than the I/O "
                      "forecast below";
    k.details.set("kernel_path", p).set("source", c.kernel_path_source).set("highway_best_target", c.simd_best);
  }
  {
    Check& k = r.add("cpu", "cores");
    k.status = c.logical_cpus >= 4 ? Status::kOk : Status::kWarn;
    k.summary = std::to_string(c.logical_cpus) + " logical CPUs available to this process";
    k.advice = c.logical_cpus >= 4 ? "k3-forward can use all " + std::to_string(c.logical_cpus) +
                                         " (its output does not depend on the thread count)"
                                   : "fewer than 4 CPUs: the matrix products, not the disk, may limit speed";
    k.details.set("logical_cpus", c.logical_cpus);
  }
}

}  // namespace k3::doctor
