// k3-bench-index MODEL_DIR [--repeat N]: time Checkpoint::open (index JSON +
// every shard header) and the memory it keeps, for sizing the index at K3's
// ~500k tensors. Prints the median of N opens and the resident-set growth of
// the first one (VmRSS before and after, so allocator slack is counted).
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "bench_usage.h"
#include "checkpoint/checkpoint.h"
#include "common/error.h"

namespace {
uint64_t status_kb(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key, 0) == 0) return std::strtoull(line.c_str() + std::strlen(key), nullptr, 10);
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "usage: k3-bench-index MODEL_DIR [--repeat N]\n"
      "  Times loading the checkpoint index and every safetensors header of MODEL_DIR (median of N).\n";
  if (auto status = k3::bench::answer_help_or_version(argc, argv, "k3-bench-index", usage)) return *status;
  if (argc < 2 || argv[1][0] == '-') return k3::bench::usage_error(usage);
  int repeat = 3;
  if (argc >= 4 && std::string(argv[2]) == "--repeat") repeat = std::max(1, std::atoi(argv[3]));
  try {
    std::vector<double> secs, cpu;
    auto cpu_now = [] {
      timespec ts;
      clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
      return ts.tv_sec + ts.tv_nsec * 1e-9;
    };
    uint64_t rss_kept_kb = 0, peak_growth_kb = 0;
    size_t tensors = 0, shards = 0;
    for (int i = 0; i < repeat; ++i) {
      malloc_trim(0);
      const uint64_t before = status_kb("VmRSS:"), hwm_before = status_kb("VmHWM:");
      auto t0 = std::chrono::steady_clock::now();
      const double c0 = cpu_now();
      k3::Checkpoint c = k3::Checkpoint::open(argv[1]);
      secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      cpu.push_back(cpu_now() - c0);
      if (i == 0) {
        rss_kept_kb = status_kb("VmRSS:") - before;
        peak_growth_kb = status_kb("VmHWM:") > hwm_before ? status_kb("VmHWM:") - before : 0;
        tensors = c.tensor_count();
        shards = c.shards().size();
      }
    }
    std::sort(secs.begin(), secs.end());
    std::sort(cpu.begin(), cpu.end());
    std::printf("index: %zu tensors in %zu shards\n", tensors, shards);
    std::printf("index load: median %.3f s wall, %.3f s CPU over %d opens (wall min %.3f, max %.3f)\n",
                secs[secs.size() / 2], cpu[cpu.size() / 2], repeat, secs.front(), secs.back());
    std::printf("index memory: %.1f MB kept (%.0f bytes/tensor), %.1f MB peak while loading\n", rss_kept_kb / 1024.0,
                tensors ? rss_kept_kb * 1024.0 / tensors : 0.0, peak_growth_kb / 1024.0);
    return 0;
  } catch (const k3::Error& e) {
    std::fprintf(stderr, "k3-bench-index: %s\n", e.what());
    return e.exit_code();
  }
}
