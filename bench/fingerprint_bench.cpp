// k3-bench-fingerprint: what the state files' model fingerprint costs on a
// checkpoint (meant for K3's size: k3-synth --preset k3 --sparse). Prints
//  - the seconds to fingerprint with every shard's digest known, as a
//    download manifest vouches for it (a directory filled by
//    k3-fetch-verify): config.json, the index and one stat per shard (the
//    digests given are placeholders: only the time is of interest);
//  - the read-and-hash rate of shard_content_digest over --sample shards,
//    and the whole checkpoint's time at that rate (what a directory without
//    a manifest costs; on a sparse checkpoint the holes read as zeros at
//    memory speed, so a real disk's bandwidth is the bound there).
//
//   k3-bench-fingerprint MODEL_DIR [--sample N]

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench_usage.h"
#include "checkpoint/checkpoint.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/file.h"
#include "state/model_fingerprint.h"

namespace {

constexpr const char* kUsage =
    "usage: k3-bench-fingerprint MODEL_DIR [--sample N]\n"
    "Times the state files' model fingerprint: with every shard's digest known (as a download manifest\n"
    "gives it) and by reading N shards (default 2), extrapolated to the whole checkpoint.\n";

using Clock = k3::SteadyClock;
using k3::seconds_since;

}  // namespace

int main(int argc, char** argv) {
  if (auto status = k3::bench::answer_help_or_version(argc, argv, "k3-bench-fingerprint", kUsage)) return *status;
  if (argc < 2) return k3::bench::usage_error(kUsage);
  size_t sample = 2;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--sample") == 0 && i + 1 < argc)
      sample = static_cast<size_t>(std::strtoull(argv[++i], nullptr, 10));
    else return k3::bench::usage_error(kUsage);
  }
  try {
    const k3::Checkpoint ck = k3::Checkpoint::open(argv[1]);
    uint64_t total = 0;
    for (const k3::ShardInfo& s : ck.shards()) total += s.file_size;

    // Every shard vouched for: what remains is the config, the index and a stat per shard.
    const k3::ShardDigests known = [](const std::string& path) -> std::string {
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0) return "";
      return std::string(32, '0');
    };
    auto t0 = Clock::now();
    (void)k3::fingerprint_model(ck, known);
    const double vouched = seconds_since(t0);

    sample = std::min(sample, ck.shards().size());
    uint64_t sampled = 0;
    t0 = Clock::now();
    for (size_t i = 0; i < sample; ++i) {
      (void)k3::shard_content_digest(ck.shards()[i].path);
      sampled += ck.shards()[i].file_size;
    }
    const double read = seconds_since(t0);
    const double rate = read > 0 ? static_cast<double>(sampled) / read : 0;
    std::printf("checkpoint: %zu shards, %.1f GB\n", ck.shards().size(), static_cast<double>(total) / 1e9);
    std::printf("fingerprint, every shard's digest known (manifest): %.3f s\n", vouched);
    std::printf("read and hash: %zu shards, %.1f GB in %.1f s on one thread = %.2f GB/s\n", sample,
                static_cast<double>(sampled) / 1e9, read, rate / 1e9);
    std::printf("whole checkpoint read at that rate: %.0f s on one thread (the fingerprint uses up to 4)\n",
                rate > 0 ? static_cast<double>(total) / rate : 0.0);
    return 0;
  } catch (const k3::Error& e) {
    std::fprintf(stderr, "k3-bench-fingerprint: %s\n", e.what());
    return e.exit_code();
  }
}
