// k3-bench-compress MODEL_DIR: the trunk codec on a checkpoint's own
// weights. Every trunk tensor (all but the routed experts) is cut into
// codec blocks and encoded; prints stored/raw per tensor kind (attention
// projections, shared experts, dense MLP, latent MoE projections and
// router, embedding, head, other) and overall, then decodes the blocks on 1
// and 2 threads: GB/s of BF16 out per core (thread CPU time) and in total
// (wall). Reads at most the first 8 MiB of each tensor (every kind is
// sampled, the head included), 1 GiB in all.
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "common/error.h"
#include "common/file.h"
#include "common/tool_main.h"
#include "model/config.h"
#include "model/tensor_manifest.h"
#include "platform/thread_cpu_time.h"
#include "trunk/codec.h"

namespace {
std::string kind_of(const std::string& name) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (has("embed_tokens")) return "embedding";
  if (has("lm_head") || has("model.norm") || has("output_attn_res")) return "head";
  if (has("shared_experts")) return "shared experts";
  if (has(".mlp.")) return "dense MLP";
  if (has("self_attn.")) return "attention";
  if (has("block_sparse_moe.")) return "latent MoE + router";
  return "norms, AttnRes";
}

struct Block {
  std::vector<uint8_t> stored;
  uint64_t raw = 0, xxh3 = 0;
};
}  // namespace

int main(int argc, char** argv) {
  return k3::run_tool("k3-bench-compress", [&] {
    using namespace k3;
    if (argc != 2) throw Error(ExitCode::kUsage, "usage: k3-bench-compress MODEL_DIR");
    const ModelConfig config = load_model_config(argv[1]);
    const Checkpoint c = Checkpoint::open(argv[1]);
    std::map<std::string, std::pair<uint64_t, uint64_t>> by_kind;  // raw, stored
    std::vector<Block> blocks;
    TrunkBlockEncoder enc;
    std::vector<uint8_t> buf;
    uint64_t budget = 1ull << 30;
    for (const ExpectedTensor& e : expected_tensors(config)) {
      if (e.group == TensorGroup::kRoutedExpert) continue;
      const TensorLocation& loc = c.at(e.name);
      const uint64_t n = std::min<uint64_t>({loc.info->nbytes, 8ull << 20, budget});
      if (n == 0) break;
      budget -= n;
      buf.resize(n);
      File::open_read(c.shards()[loc.shard].path).pread_exact(buf.data(), n, loc.info->offset);
      auto& [raw, stored] = by_kind[kind_of(e.name)];
      for (uint64_t o = 0; o < n; o += kTrunkBlockBytes) {
        Block b;
        b.raw = std::min<uint64_t>(kTrunkBlockBytes, n - o);
        enc.encode(buf.data() + o, b.raw, e.dtype == DType::kBF16, &b.stored);
        b.xxh3 = XXH3_64bits(buf.data() + o, b.raw);
        raw += b.raw;
        stored += b.stored.size();
        blocks.push_back(std::move(b));
      }
    }
    uint64_t raw_all = 0, stored_all = 0;
    std::printf("%-22s %12s %12s %8s\n", "tensor kind", "raw bytes", "stored", "ratio");
    for (const auto& [kind, rs] : by_kind) {
      std::printf("%-22s %12llu %12llu %7.1f%%\n", kind.c_str(), (unsigned long long)rs.first,
                  (unsigned long long)rs.second, 100.0 * rs.second / std::max<uint64_t>(1, rs.first));
      raw_all += rs.first;
      stored_all += rs.second;
    }
    std::printf("%-22s %12llu %12llu %7.1f%%\n", "all trunk", (unsigned long long)raw_all,
                (unsigned long long)stored_all, 100.0 * stored_all / std::max<uint64_t>(1, raw_all));
    for (int threads : {1, 2}) {
      std::vector<double> cpu(threads);
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
          TrunkBlockDecoder dec;
          std::vector<uint8_t> out(kTrunkBlockBytes);
          const double c0 = k3::thread_cpu_seconds();
          for (int rep = 0; rep < 3; ++rep)
            for (size_t i = t; i < blocks.size(); i += threads)
              if (!dec.decode(blocks[i].stored.data(), blocks[i].stored.size(), out.data(), blocks[i].raw,
                              blocks[i].xxh3)
                       .empty())
                std::abort();
          cpu[t] = k3::thread_cpu_seconds() - c0;
        });
      for (auto& th : pool) th.join();
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      double cpu_total = 0;
      for (double x : cpu) cpu_total += x;
      const double bytes = 3.0 * raw_all;
      std::printf("decode, %d thread%s: %.2f GB/s per core (CPU time), %.2f GB/s wall\n", threads,
                  threads > 1 ? "s" : "", bytes / cpu_total / 1e9, bytes / wall / 1e9);
    }
    return 0;
  });
}
