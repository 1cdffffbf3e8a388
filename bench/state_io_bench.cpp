// k3-bench-state: how long saving and loading a conversation takes for the
// real Kimi-K3 geometry (69 KDA layers of 96 x 128 x 128, 24 MLA layers with
// a 512+64 latent, vocab 163840) at a given context length. Writes a state
// file (streaming XXH3, fsync, rename), reads it back (checksum pass, then
// the sections), and prints sizes, median seconds and MB/s. Asserts nothing.
//
//   k3-bench-state [--positions N] [--dir DIR] [--reps N]
//
// The read usually comes from the page cache right after the write; drop
// caches between runs (echo 3 > /proc/sys/vm/drop_caches) to see the disk.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include <unistd.h>

#include "bench_usage.h"
#include "common/clock.h"
#include "state/state_file.h"

namespace {

using Clock = k3::SteadyClock;
using k3::seconds_since;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

k3::StateGeometry k3_geometry() {
  k3::StateGeometry g;
  g.vocab_size = 163840;
  g.kda_heads = 96;
  g.kda_head_dim = 128;
  g.conv_kernel = 4;
  g.kv_lora_rank = 512;
  g.qk_rope_head_dim = 64;
  g.layer_is_mla.assign(93, 0);
  for (int i = 3; i < 93; i += 4) g.layer_is_mla[i] = 1;
  g.layer_is_mla[92] = 1;  // 24 MLA layers
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "usage: k3-bench-state [--positions N] [--dir DIR] [--reps N]\n"
      "  Times writing and reading a K3-geometry conversation state of N positions in DIR.\n";
  if (auto status = k3::bench::answer_help_or_version(argc, argv, "k3-bench-state", usage)) return *status;
  int64_t positions = 4096;
  std::string dir = "/tmp";
  int reps = 3;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--positions" && i + 1 < argc) positions = std::atoll(argv[++i]);
    else if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    else if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else return k3::bench::usage_error(usage);
  }
  try {
    k3::ConversationState s;
    s.geometry = k3_geometry();
    s.model = {1, 2, 3};
    const k3::StateGeometry& g = s.geometry;
    s.sequence.positions = positions;
    s.sequence.tokens.assign(static_cast<size_t>(positions), 42);
    s.sequence.layers.resize(g.num_layers());
    for (uint32_t i = 0; i < g.num_layers(); ++i) {
      k3::LayerState& l = s.sequence.layers[i];
      if (g.layer_is_mla[i]) {
        l.mla.latent.assign(static_cast<size_t>(positions) * g.mla_floats_per_position(), 0.5f + i);
      } else {
        l.kda.S.assign(g.kda_state_floats(), 0.25f + i);
        l.kda.conv_q.assign(g.kda_conv_floats(), 1.0f);
        l.kda.conv_k.assign(g.kda_conv_floats(), 2.0f);
        l.kda.conv_v.assign(g.kda_conv_floats(), 3.0f);
      }
    }
    s.pending = {7};
    const std::string path = dir + "/k3-bench-state-" + std::to_string(::getpid()) + ".k3s";
    const uint64_t bytes = k3::state_file_bytes(g, {static_cast<uint64_t>(positions), 1, false, false});
    std::printf("k3-bench-state: K3 geometry, %lld positions, state file %.1f MB, in %s\n",
                static_cast<long long>(positions), bytes / 1e6, dir.c_str());
    // Wall time and this process's CPU time: on a busy machine the wall time
    // mostly measures waiting for a core.
    std::vector<double> w, r, wc, rc;
    for (int rep = 0; rep < reps; ++rep) {
      auto t0 = Clock::now();
      std::clock_t c0 = std::clock();
      k3::write_state_file(path, s);
      w.push_back(seconds_since(t0));
      wc.push_back(double(std::clock() - c0) / CLOCKS_PER_SEC);
      t0 = Clock::now();
      c0 = std::clock();
      k3::ConversationState back = k3::read_state_file(path, s.model, g);
      r.push_back(seconds_since(t0));
      rc.push_back(double(std::clock() - c0) / CLOCKS_PER_SEC);
      if (back.sequence.positions != positions) throw std::runtime_error("read back another state");
    }
    ::unlink(path.c_str());
    std::printf("write (XXH3 + fsync + rename): median %.3f s wall (%.0f MB/s), %.3f s CPU\n", median(w),
                bytes / 1e6 / median(w), median(wc));
    std::printf("read (checksum pass + sections): median %.3f s wall (%.0f MB/s), %.3f s CPU\n", median(r),
                bytes / 1e6 / median(r), median(rc));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "k3-bench-state: %s\n", e.what());
    return 1;
  }
  return 0;
}
