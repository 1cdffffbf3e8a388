// k3-bench-kernels: speed of the matrix-vector kernels at real Kimi-K3 sizes,
// as a fraction of the single-core memory read bandwidth measured in the same
// run. Prints figures only; asserts nothing.
//
//   k3-bench-kernels [--reps N] [--threads "1 2"] [--only TEXT] [--hot] [--quick] [--target NAME]

#include <strings.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "bench_usage.h"
#include "common/clock.h"
#include "common/thread_pool.h"
#include "hwy/targets.h"
#include "kernels/bf16.h"
#include "kernels/matmul.h"

namespace {

using Clock = k3::SteadyClock;
using k3::seconds_since;

// CPU time of the whole process (all threads): on a busy machine it shows
// the work done, where wall time also counts waiting for a core.
double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Single-core streaming read: sum of 64-bit words over a buffer far larger
// than any cache, with several accumulators so the add chain is not the limit.
double measure_read_bandwidth(size_t bytes, int reps) {
  std::vector<uint64_t> buf(bytes / sizeof(uint64_t));
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = i * 0x9e3779b97f4a7c15ull;
  std::vector<double> gbs;
  volatile uint64_t sink = 0;
  for (int rep = 0; rep < reps; ++rep) {
    const auto t0 = Clock::now();
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    const uint64_t* p = buf.data();
    const size_t n = buf.size() / 4 * 4;
    for (size_t i = 0; i < n; i += 4) {
      s0 += p[i];
      s1 += p[i + 1];
      s2 += p[i + 2];
      s3 += p[i + 3];
    }
    sink = sink + s0 + s1 + s2 + s3;
    gbs.push_back(static_cast<double>(n * sizeof(uint64_t)) / seconds_since(t0) / 1e9);
  }
  return median(gbs);
}

struct Shape {
  const char* name;
  bool mxfp4;
  size_t rows, cols;
};

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "usage: k3-bench-kernels [--reps N] [--threads \"1 2\"] [--only TEXT] [--hot] [--quick] [--target NAME]\n"
      "  Times BF16/MXFP4 matvec (n=1 and n=16 tokens) at Kimi-K3 sizes and at the\n"
      "  bench checkpoint's hidden size, and compares the weight bytes/s with a\n"
      "  single-core memory read.\n"
      "  --target NAME  run the kernels' code for this SIMD target (AVX2, AVX3, ...; one\n"
      "                 this CPU runs), e.g. the AVX2 code on an AVX-512 machine\n";
  if (auto status = k3::bench::answer_help_or_version(argc, argv, "k3-bench-kernels", usage)) return *status;
  int reps = 9;
  bool quick = false;
  bool hot = false;    // one copy of each matrix: cache-resident when it fits
  std::string only;    // run only matrices whose name contains this
  std::string target;  // the SIMD target to run (default: the best this CPU runs)
  std::vector<int> thread_counts = {1, 2};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--threads" && i + 1 < argc) {
      thread_counts = k3::bench::parse_thread_counts(argv[++i]);
    } else if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (a == "--hot") {
      hot = true;
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "--target" && i + 1 < argc) {
      target = argv[++i];
    } else {
      return k3::bench::usage_error(usage);
    }
  }

  if (!target.empty()) {
    // Highway dispatches to the best target the CPU runs; pinning the set
    // to one makes every kernel call take that target's code.
    int64_t chosen = 0;
    std::string names;
    for (int64_t t : hwy::SupportedAndGeneratedTargets()) {
      names += std::string(names.empty() ? "" : ", ") + hwy::TargetName(t);
      if (strcasecmp(target.c_str(), hwy::TargetName(t)) == 0) chosen = t;
    }
    if (chosen == 0) {
      std::fprintf(stderr, "k3-bench-kernels: --target %s: not a target this build has and this CPU runs (%s)\n",
                   target.c_str(), names.c_str());
      return 2;
    }
    hwy::SetSupportedTargetsForTest(chosen);
  }
  std::printf("kernel target: %s\n", k3::kernels::kernel_target_name());
  const size_t read_bytes = quick ? (size_t{256} << 20) : (size_t{1} << 30);
  const double mem_gbs = measure_read_bandwidth(read_bytes, quick ? 3 : 5);
  std::printf(
      "columns: median and min wall time per call, median process CPU time per\n"
      "call (all threads), weight bytes / median wall time, and that over the read\n"
      "bandwidth ('x mem'). On a busy machine wall time includes waiting for a core.\n");
  std::printf("single-core memory read (streaming sum over %zu MB): %.2f GB/s\n\n", read_bytes >> 20, mem_gbs);

  const std::vector<Shape> shapes = {
      {"bf16 attn/o_proj 7168x7168", false, 7168, 7168},
      {"bf16 lm_head slice 32768x7168", false, 32768, 7168},
      // The bench checkpoint's hidden size (k3-synth --preset bench): short rows.
      {"bf16 bench q_proj 1536x1536", false, 1536, 1536},
      {"bf16 bench lm_head 32768x1536", false, 32768, 1536},
      {"mxfp4 expert w1/w3 3072x3584", true, 3072, 3584},
      {"mxfp4 expert w2 3584x3072", true, 3584, 3072},
  };

  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::printf("%-32s %3s %3s %10s %8s %8s %11s %6s\n", "matrix", "n", "thr", "median ms", "min ms", "cpu ms",
              "weight GB/s", "x mem");
  for (const Shape& s : shapes) {
    if (!only.empty() && std::string(s.name).find(only) == std::string::npos) continue;
    // Weights: random but valid (MXFP4 scale bytes in a normal range). Calls
    // rotate over enough copies (>= 384 MB) that each call reads its weights
    // from memory, not from a cache warmed by the previous call.
    const size_t weight_bytes = s.mxfp4 ? s.rows * s.cols / 2 + s.rows * s.cols / 32 : s.rows * s.cols * 2;
    const size_t copies = hot ? 1 : std::max<size_t>(2, (size_t{384} << 20) / weight_bytes + 1);
    std::vector<std::vector<uint16_t>> wb(s.mxfp4 ? 0 : copies);
    std::vector<std::vector<uint8_t>> packed(s.mxfp4 ? copies : 0), scales(s.mxfp4 ? copies : 0);
    for (size_t k = 0; k < copies; ++k) {
      if (s.mxfp4) {
        packed[k].resize(s.rows * s.cols / 2);
        scales[k].resize(s.rows * s.cols / 32);
        for (auto& b : packed[k]) b = static_cast<uint8_t>(rng());
        for (auto& b : scales[k]) b = static_cast<uint8_t>(120 + rng() % 10);
      } else {
        wb[k].resize(s.rows * s.cols);
        for (auto& w : wb[k]) w = k3::kernels::f32_to_bf16(uni(rng));
      }
    }
    for (size_t n : {size_t{1}, size_t{16}}) {
      std::vector<float> x(n * s.cols), y(n * s.rows);
      for (auto& v : x) v = uni(rng);
      for (int threads : thread_counts) {
        k3::ThreadPool pool(threads);
        size_t next = 0;
        auto call = [&] {
          const size_t k = next++ % copies;
          if (s.mxfp4) {
            k3::kernels::matmul_mxfp4(packed[k].data(), scales[k].data(), s.rows, s.cols, x.data(), n, y.data(), &pool);
          } else {
            k3::kernels::matmul_bf16(wb[k].data(), s.rows, s.cols, x.data(), n, y.data(), &pool);
          }
        };
        call();  // warm-up (scratch buffers)
        std::vector<double> times, cpu;
        for (int r = 0; r < reps; ++r) {
          const double c0 = process_cpu_seconds();
          const auto t0 = Clock::now();
          call();
          times.push_back(seconds_since(t0));
          cpu.push_back(process_cpu_seconds() - c0);
        }
        const double t = median(times);
        const double gbs = static_cast<double>(weight_bytes) / t / 1e9;
        std::printf("%-32s %3zu %3d %10.3f %8.3f %8.3f %11.2f %6.2f\n", s.name, n, threads, t * 1e3,
                    *std::min_element(times.begin(), times.end()) * 1e3, median(cpu) * 1e3, gbs, gbs / mem_gbs);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
