// The DSpark draft pass's time on this machine at true geometry, next to the
// disk time of the verify pass it runs beside (docs/dspark.md, "Draft pass
// time"). The draft is a checkpoint on disk (k3-synth --dspark [--sparse]:
// the real layout and sizes), timed through the project's draft pass
// (DSparkModel::propose and fuse_context, the kernels k3-forward uses).
// K3's embedding and lm_head, which the draft shares with the target, come
// from a stand-in source: random BF16 rows, the lm_head handed over in
// blocks of 8192 rows of one buffer (the same arithmetic and memory traffic
// as the real head, without 2.35 GB more of RAM). The context is filled with
// random latents instead of fusing thousands of positions.
//
// Usage: k3-bench-draft-time DRAFT_DIR [--threads N] [--passes N] [--stream-mb MB]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_usage.h"
#include "common/error.h"
#include "common/thread_pool.h"
#include "common/tool_main.h"
#include "draft/draft_pass.h"
#include "draft/dspark_weights.h"
#include "draft/verify_policy.h"
#include "model/weight_source.h"

using namespace k3;

namespace {

constexpr const char* kUsage =
    "usage: k3-bench-draft-time DRAFT_DIR [--threads N] [--passes N] [--stream-mb MB]\n"
    "  Times the DSpark draft pass (7 rows) at contexts of 0, 4096 and 32768 positions and the fusion of one\n"
    "  committed position, on the draft in DRAFT_DIR (k3-synth --dspark DIR --sparse writes one at true size),\n"
    "  and compares it with the disk time of the K3 verify pass it runs beside (bytes / 3.5 GB/s).\n"
    "  --stream-mb MB: the draft's matrices stream in row blocks of MB (as on the min and laptop presets).\n";

uint16_t random_bf16(uint64_t& s) {
  s = s * 6364136223846793005ull + 1442695040888963407ull;
  return static_cast<uint16_t>((((s >> 40) & 1u) << 15) | ((127u - 7u + ((s >> 41) & 1u)) << 7) | ((s >> 33) & 0x7Fu));
}

// K3's embedding and lm_head as the draft reads them.
class StandIn : public WeightSource {
 public:
  StandIn(int64_t vocab, int64_t hidden) : vocab_(vocab), hidden_(hidden), block_(kBlockRows * hidden) {
    uint64_t s = 7;
    for (uint16_t& v : block_) v = random_bf16(s);
    head_.lm_head = Bf16Matrix{nullptr, vocab, hidden, nullptr};
  }
  void embed(const int32_t* ids, size_t n, float* out) override {
    for (size_t t = 0; t < n; ++t)
      for (int64_t j = 0; j < hidden_; ++j)
        out[t * hidden_ + j] =
            0.01f * static_cast<float>(block_[(static_cast<size_t>(ids[t]) % kBlockRows) * hidden_ + j] & 0xFF);
  }
  const LayerWeights& acquire_layer(int) override { throw Error(ExitCode::kInternal, "no trunk in the draft bench"); }
  void release_layer(int) override {}
  void for_each_expert(int, const std::vector<int>&,
                       const std::function<void(size_t, const ExpertWeights&)>&) override {
    throw Error(ExitCode::kInternal, "no experts in the draft bench");
  }
  const HeadWeights& acquire_head() override { return head_; }
  void release_head() override {}
  void for_each_head_block(const HeadWeights&, const HeadBlock& on_block) override {
    for (int64_t r0 = 0; r0 < vocab_; r0 += kBlockRows)
      on_block(r0, Bf16Matrix{block_.data(), std::min<int64_t>(kBlockRows, vocab_ - r0), hidden_, nullptr});
  }

 private:
  static constexpr int64_t kBlockRows = 8192;
  int64_t vocab_, hidden_;
  std::vector<uint16_t> block_;
  HeadWeights head_;
};

double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int run(int argc, char** argv) {
  if (auto status = bench::answer_help_or_version(argc, argv, "k3-bench-draft-time", kUsage)) return *status;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each figure as soon as it is measured
  std::string dir;
  int threads = 0, passes = 3;
  double stream_mb = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--passes" && i + 1 < argc) passes = std::max(1, std::atoi(argv[++i]));
    else if (a == "--stream-mb" && i + 1 < argc) stream_mb = std::atof(argv[++i]);
    else if (dir.empty() && a[0] != '-') dir = a;
    else return bench::usage_error(kUsage);
  }
  if (dir.empty()) return bench::usage_error(kUsage);
  ThreadPool pool(threads);
  const DSparkConfig c = load_dspark_config(dir);
  auto t0 = std::chrono::steady_clock::now();
  DSparkModel model(c, load_dspark_weights(c, dir, static_cast<uint64_t>(stream_mb * 1e6)));
  std::printf("draft %s: %d layers, hidden %d, vocabulary %d; %s held, %s streamed; loaded in %.1f s; %d threads\n",
              dir.c_str(), c.num_hidden_layers, c.hidden_size, c.vocab_size,
              (std::to_string(model.weights().bytes / 1000000) + " MB").c_str(),
              (std::to_string(model.weights().streamed_bytes / 1000000) + " MB").c_str(), seconds(t0), pool.size());
  StandIn target(c.vocab_size, c.hidden_size);
  const size_t stride = static_cast<size_t>(c.kv_stride());
  uint64_t s = 11;
  std::vector<double> per_context;
  for (int64_t positions : {int64_t{0}, int64_t{4096}, int64_t{32768}}) {
    DraftContext ctx;
    ctx.layers.assign(static_cast<size_t>(c.num_hidden_layers), {});
    for (auto& l : ctx.layers) {
      l.resize(static_cast<size_t>(positions) * stride);
      for (float& v : l) v = 0.01f * static_cast<float>(random_bf16(s) & 0xFF);
    }
    ctx.positions = positions;
    model.propose(target, ctx, 1, static_cast<size_t>(c.block_size), &pool);  // warm-up
    double best = 1e30;
    for (int p = 0; p < passes; ++p) {
      t0 = std::chrono::steady_clock::now();
      model.propose(target, ctx, 1 + p, static_cast<size_t>(c.block_size), &pool);
      best = std::min(best, seconds(t0));
    }
    per_context.push_back(best);
    std::printf("draft pass (%d rows) at a context of %6lld positions: %.3f s (best of %d)\n", c.block_size,
                static_cast<long long>(positions), best, passes);
  }
  // Fusion: a verify pass commits 1 + accepted positions.
  std::vector<float> taps(static_cast<size_t>(c.num_taps()) * c.hidden_size * 4);
  for (float& v : taps) v = 0.01f * static_cast<float>(random_bf16(s) & 0xFF);
  DraftContext ctx;
  t0 = std::chrono::steady_clock::now();
  model.fuse(taps.data(), 4, ctx, &pool);
  const double fuse4 = seconds(t0);
  std::printf("fusion of 4 committed positions: %.3f s\n", fuse4);
  // The verify pass beside it: K3 at the laptop preset (VerifyCosts), 1 + 4 rows.
  const VerifyCosts k3;
  const double disk = (k3.pass + 5 * k3.per_row) / 3.5;
  const double draft = per_context[1] + fuse4;
  std::printf(
      "verify pass of 5 rows at the laptop preset: %.1f GB / 3.5 GB/s = %.1f s of disk; draft pass + fusion "
      "at 4096 positions %.2f s = %.1f%% of it (%s)\n",
      k3.pass + 5 * k3.per_row, disk, draft, 100 * draft / disk,
      draft < disk ? "hidden behind the disk" : "longer than the disk");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return k3::run_tool("k3-bench-draft-time", [&] { return run(argc, argv); });
}
