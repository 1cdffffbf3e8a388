// k3-bench-expert-cache: replays a routing trace through the expert cache's
// own slot table and eviction policies (expert_cache/expert_cache_replay.h; no
// bytes are read) and prints the hit rate and the expert bytes read per token
// a cache of --cache-gb would have given, or (--table) the whole table over
// every preset's cache size and 8/16/32/64 GB, every policy and Belady's
// optimum, in both replay orders. docs/expert-cache.md explains the orders
// and holds the table for the real Kimi-K3 trace in tests/data/expert-trace/.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "cli/cli_parse.h"
#include "common/error.h"
#include "common/tool_main.h"
#include "expert_cache/expert_cache_replay.h"
#include "model/config.h"
#include "model/k3_geometry.h"
#include "planning/presets.h"

namespace {

using namespace k3;

constexpr const char* kTool = "k3-bench-expert-cache";
constexpr uint64_t kK3ExpertBytes = 17547264;  // one K3 expert's MXFP4 tensors, as ExpertIndex lays out a slot

struct Row {
  std::string policy;
  double cache_gb = 0;
  uint64_t slots = 0;
  ReplayResult result;
};

// As the memory plan sizes the arena: whole slots, at least one layer's top-k.
uint64_t slots_for(double cache_gb, uint64_t expert_bytes, const ExpertCacheShape& shape) {
  const auto budget = static_cast<uint64_t>(cache_gb * 1e9);
  const uint64_t all = static_cast<uint64_t>(shape.layers) * shape.num_experts;
  return std::min(std::max(budget / expert_bytes, static_cast<uint64_t>(shape.experts_per_token)), all);
}

Row run(const std::string& policy, double cache_gb, uint64_t expert_bytes, const ExpertCacheShape& shape,
        const ExpertCallSequence& seq) {
  Row r{policy, cache_gb, slots_for(cache_gb, expert_bytes, shape), {}};
  r.result = policy == "belady"
                 ? replay_belady(seq, shape, r.slots)
                 : replay_expert_cache(seq, shape, r.slots, parse_expert_cache_policy(policy, "--policy"));
  return r;
}

void print_json(const Row& r, const std::string& order, uint64_t expert_bytes) {
  std::printf(
      "{\"policy\": \"%s\", \"cache_gb\": %g, \"order\": \"%s\", \"slots\": %llu, \"hit_rate\": %.6f, "
      "\"bytes_per_token\": %.0f}\n",
      r.policy.c_str(), r.cache_gb, order.c_str(), static_cast<unsigned long long>(r.slots), r.result.hit_rate(),
      r.result.bytes_per_pass(expert_bytes));
}

// Markdown: one row per cache size, hit rate and GB per token of each policy.
void print_table(const std::string& order, const std::vector<std::string>& policies, const std::vector<double>& sizes,
                 uint64_t expert_bytes, const ExpertCacheShape& shape, const ExpertCallSequence& seq) {
  std::printf("\n%s order (%llu passes, %zu calls):\n\n| cache | slots |", order.c_str(),
              static_cast<unsigned long long>(seq.passes), seq.calls.size());
  for (const std::string& p : policies) std::printf(" %s |", p.c_str());
  std::printf("\n|---|---|");
  for (size_t i = 0; i < policies.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (double gb : sizes) {
    std::printf("| %g GB | %llu |", gb, static_cast<unsigned long long>(slots_for(gb, expert_bytes, shape)));
    for (const std::string& p : policies) {
      const Row r = run(p, gb, expert_bytes, shape, seq);
      std::printf(" %.1f%% %.2f GB |", 100 * r.result.hit_rate(), r.result.bytes_per_pass(expert_bytes) / 1e9);
    }
    std::printf("\n");
  }
}

int bench(int argc, char** argv) {
  CLI::App app{
      "Replays a routing trace (int32 little-endian (layer, expert) pairs: k3-forward --expert-trace, or the real\n"
      "Kimi-K3 trace in tests/data/expert-trace/) through the expert cache's own slot table and eviction policy,\n"
      "without reading a byte, and prints the hit rate and the expert bytes read per token a cache of --cache-gb\n"
      "would give. --order recorded replays the pairs as they are in the file; --order decode rebuilds k3's decode\n"
      "order (position by position, layers in order) from a recomputing engine's trace (its last step).\n"
      "Example: k3-bench-expert-cache --trace tests/data/expert-trace/expert_trace.bin --cache-gb 16 --order decode "
      "--json",
      kTool};
  std::string trace_file, policy = expert_cache_policy_name(kDefaultExpertCachePolicy), order = "recorded", model_dir;
  double cache_gb = -1;
  uint64_t expert_bytes = kK3ExpertBytes;
  bool json = false, table = false;
  app.add_option("--trace", trace_file, "The routing trace to replay")->required();
  app.add_option("--cache-gb", cache_gb, "Expert cache size in GB (1e9 bytes), as --cache-gb of k3-forward")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--policy", policy,
                 "lru, layer, layer-lfu, lfu, or belady (the offline optimum); default: the "
                 "engine's default")
      ->check(CLI::IsMember({"lru", "layer", "layer-lfu", "lfu", "belady"}));
  app.add_option("--order", order, "recorded (the file's order) or decode (k3's order, rebuilt; default recorded)")
      ->check(CLI::IsMember({"recorded", "decode"}));
  app.add_option("--expert-bytes", expert_bytes, "Bytes of one expert (default 17547264, Kimi-K3's)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  app.add_option("--model", model_dir,
                 "Take the geometry (MoE layers, experts, top-k) from MODEL_DIR's config.json "
                 "(default: Kimi-K3's)");
  app.add_flag("--json", json, "Print one JSON object: policy, cache_gb, order, slots, hit_rate, bytes_per_token");
  app.add_flag("--table", table,
               "Every policy and Belady at every preset's cache size and 8/16/32/64 GB, both orders "
               "(markdown)");
  app.footer(exit_codes_help());
  if (auto status = parse_command_line(app, argc, argv, kTool)) return *status;
  if (!table && cache_gb < 0) throw Error(ExitCode::kUsage, "--cache-gb is required (or --table for every size)");

  const ModelConfig config = model_dir.empty() ? k3_reference_config() : load_model_config(model_dir);
  const ExpertCacheShape shape = ExpertCacheShape::of(config);
  const std::vector<ExpertRequest> trace = read_expert_trace(trace_file, shape);
  if (!table) {
    const ExpertCallSequence seq =
        order == "decode" ? calls_in_decode_order(trace, shape) : calls_as_recorded(trace, shape);
    const Row r = run(policy, cache_gb, expert_bytes, shape, seq);
    if (json) {
      print_json(r, order, expert_bytes);
    } else {
      std::printf("%s, %g GB (%llu slots), %s order: hit rate %.2f%%, %.3f GB of experts per token\n", r.policy.c_str(),
                  r.cache_gb, static_cast<unsigned long long>(r.slots), order.c_str(), 100 * r.result.hit_rate(),
                  r.result.bytes_per_pass(expert_bytes) / 1e9);
    }
    return 0;
  }
  std::set<double> sizes = {8, 16, 32, 64};
  for (const Preset& p : presets()) sizes.insert(p.cache_gb);
  std::vector<std::string> policies;
  for (ExpertCachePolicyKind k : expert_cache_policy_kinds()) policies.push_back(expert_cache_policy_name(k));
  policies.push_back("belady");
  std::printf(
      "Hit rate and expert GB read per token; %llu-byte experts; cache 0 GB is the floor of one layer's "
      "top-k.\n",
      static_cast<unsigned long long>(expert_bytes));
  const std::vector<double> size_list(sizes.begin(), sizes.end());
  try {
    print_table("decode", policies, size_list, expert_bytes, shape, calls_in_decode_order(trace, shape));
  } catch (const Error& e) {  // a trace k3 recorded is in decode order already
    std::printf("\ndecode order: not rebuilt (%s)\n", e.what());
  }
  print_table("recorded", policies, size_list, expert_bytes, shape, calls_as_recorded(trace, shape));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return k3::run_tool(kTool, [&] { return bench(argc, argv); });
}
