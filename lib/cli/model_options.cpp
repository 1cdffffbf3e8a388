#include "cli/model_options.h"

#include "cli/first_token_text.h"
#include "cli/flag_checks.h"
#include "cli/path_flag.h"
#include "cli/preset_table.h"

#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "common/cli_limits.h"
#include "common/error.h"
#include "common/file.h"
#include "common/quiet.h"
#include "expert_cache/expert_cache_policy.h"
#include "expert_cache/expert_trace.h"

namespace k3 {

void add_model_options(CLI::App& app, ModelOptions& o) {
  app.add_option("MODEL_DIR", o.model_dir,
                 "Model directory: config.json, model.safetensors.index.json and shards (not needed for "
                 "--list-presets, which then shows the real Kimi-K3)");
  app.add_flag("--quiet", o.quiet, "Print nothing on stderr but errors: no plan, progress or summary");
  app.add_option("--threads", o.threads, "Worker threads (default 0: all cores); output is identical for any count")
      ->check(cli::in_range(0, kMaxComputeThreads));
}

namespace {

// --gpu and --gpu-mb (docs/gpu.md): the device of a prompt's products and its memory budget.
void add_gpu_options(CLI::App& app, RunRequest& r) {
  app.add_option("--gpu", r.gpu_device,
                 "Run the matrix products of a long prompt on Vulkan device INDEX (0 when none is given; k3-doctor "
                 "lists them), with the CPU's bits; decode stays on the CPU (docs/gpu.md; default: none: the CPU only)")
      ->expected(0, 1)
      ->default_str("0")
      ->check(cli::non_negative());
  app.add_option("--gpu-mb", r.gpu_mb,
                 "MB (1e6 bytes) of device memory --gpu's products may hold (default 0: no cap); a plan whose "
                 "largest product needs more is refused")
      ->check(cli::finite_range(kMaxGigabytes * 1000));
}

}  // namespace

void add_budget_options(CLI::App& app, ModelOptions& o, bool expert_trace, const ContextHelp& help) {
  RunRequest& r = o.stream;
  app.add_option(
         "--trunk", r.trunk_dir,
         "Packed trunk from k3-pack: pin --trunk-gb of it in RAM and stream the rest every token (default: none: the "
         "whole trunk is read from the shards and held in RAM)")
      ->check(cli::non_empty_path());
  app.add_option("--trunk-gb", r.trunk_gb,
                 "GB (1e9 bytes) of trunk layers to pin in RAM (needs --trunk); with room left after every "
                 "layer and the head, the embedding too (default: the preset's; laptop's without --preset)")
      ->check(cli::finite_range(kMaxGigabytes));
  app.add_option("--cache-gb", r.cache_gb,
                 "GB of routed-expert cache (experts stream from the shards; default: the preset's; laptop's "
                 "without --preset)")
      ->check(cli::finite_range(kMaxGigabytes));
  std::vector<std::string> policies;
  for (ExpertCachePolicyKind k : expert_cache_policy_kinds()) policies.push_back(expert_cache_policy_name(k));
  app.add_option_function<std::string>(
         "--expert-cache-policy",
         [&r](const std::string& name) { r.cache_policy = parse_expert_cache_policy(name, "--expert-cache-policy"); },
         "Which cached expert makes room when the expert cache is full: layer-lfu (default: each MoE layer keeps an "
         "equal share of the slots and gives up its least often used expert, counts halving every 4 tokens), layer "
         "(the same shares, least recently used within a layer), lfu (least often used overall) or lru (least "
         "recently used overall). Changes the bytes read, never the output (docs/expert-cache.md)")
      ->check(CLI::IsMember(policies));
  if (expert_trace)
    app.add_option("--expert-trace", o.expert_trace,
                   "Record every (layer, expert) the model asks for, in order, into FILE (little-endian int32 pairs, "
                   "layer as the checkpoint numbers it; created exclusively, replaced whole at the end) for "
                   "k3-bench-expert-cache (docs/expert-cache.md) (default: none: not recorded)")
        ->check(cli::non_empty_path());
  if (expert_trace)
    app.add_option("--expert-lookahead-from", o.lookahead_trace,
                   "A measurement: --expert-lookahead with every guess right, taken from TRACE, an --expert-trace "
                   "of this same run (same model, prompt and flags) recorded earlier. Shows the most the lookahead "
                   "can give on this disk (docs/memory.md); output is identical (default: none)")
        ->check(cli::non_empty_path());
  app.add_option("--preset", r.preset,
                 "Memory preset: min, laptop, desktop, workstation, server, max, or auto (the largest whose forecast "
                 "fits the memory available now; --trunk-gb/--cache-gb/--block-mb override it) (default: none: "
                 "laptop's budgets with --trunk or a budget, every weight in RAM without)");
  app.add_option("--block-mb", r.block_mb,
                 "Stream trunk matrices in row blocks of at most MB (1e6 bytes; at least one row of the widest "
                 "matrix; 0: whole layers). Needs --trunk (default: the preset's; laptop's without --preset)")
      ->check(cli::finite_range(kMaxGigabytes * 1000));
  app.add_flag("--list-presets", o.list_presets,
               "Print each preset's forecast peak RSS and bytes and seconds per generated token for MODEL_DIR (or "
               "the real Kimi-K3 when none is given), then exit");
  app.add_option("--read-gbps", o.read_gbps,
                 "Read bandwidth in GB/s for --list-presets' and --plan's forecasts (seconds per token, time to "
                 "first token), e.g. the one k3-doctor measured (default: 2 GB/s assumed)")
      ->check(cli::in_range(0.001, 1e4));
  app.add_option("--prompt-tokens", o.prompt_tokens,
                 "Prompt tokens for --list-presets' and --plan's time-to-first-token forecast (default 4000: an "
                 "agent's system prompt and tools)")
      ->check(cli::in_range(1, 1 << 24));
  app.add_flag("--plan", o.plan_only, help.plan);
  // 1 position holds a prompt id but not the id generated after it.
  app.add_option("--ctx", o.ctx, help.ctx)
      ->check(CLI::Validator(
          [](std::string& input) -> std::string {
            const double v = std::strtod(input.c_str(), nullptr);
            return v > 0 && v < 2 ? input + " is too small (valid: 0 for the default, or from 2 to " +
                                        std::to_string(kMaxContext) +
                                        "; a context holds a prompt id and the id generated after it)"
                                  : std::string();
          },
          ""))
      ->check(cli::in_range(0, static_cast<double>(kMaxContext)));
  app.add_option("--io-threads", r.io_threads, "Parallel reads in flight when streaming (default 8)")
      ->check(cli::in_range(1, kMaxIoThreads));
  app.add_flag("--expert-lookahead", r.expert_lookahead,
               "While a MoE layer computes, read the experts the next layer is guessed to use (its router applied "
               "to this layer's input) into spare expert-cache slots. Needs a pinned trunk layer for the guess and "
               "a cache larger than one layer's experts; wrong guesses cost reads (--stats-json counts them). "
               "Output is identical on or off");
  add_gpu_options(app, r);
  app.add_option("--stats-json", o.stats_json,
                 "Write the streaming counters to FILE (JSON, written atomically; default: none: not written)")
      ->check(cli::non_empty_path());
}

std::optional<int> answer_plan_requests(const ModelConfig& config, ModelOptions& o, const char* tool,
                                        uint64_t plan_batch) {
  o.stream.compute_threads = o.threads;
  // Checked before any weight is read; a device or FIFO is written through.
  if (!o.stats_json.empty()) check_output_path(o.stats_json, OutputPolicy::kFileOrStream);
  if (!o.expert_trace.empty()) check_output_path(o.expert_trace, OutputPolicy::kRegularFile);
  if (!o.lookahead_trace.empty()) {
    if (!o.stream.active())
      throw Error(ExitCode::kUsage,
                  "--expert-lookahead-from guesses the experts of a streaming run, and this run is resident: give "
                  "--trunk, --preset or --cache-gb, or drop the flag");
    // Read once, and refused now, before any weight is read.
    o.lookahead_pairs = read_expert_trace(o.lookahead_trace, ExpertCacheShape::of(config));
    o.stream.expert_lookahead = true;
  }
  if (o.stream.expert_lookahead && !o.stream.active())
    throw Error(ExitCode::kUsage,
                "--expert-lookahead reads experts ahead of a streaming run, and this run is resident: give --trunk, "
                "--preset or --cache-gb, or drop the flag");
  if (!o.plan_only) return std::nullopt;
  if (!o.stream.active())
    throw Error(ExitCode::kUsage, "--plan shows a streaming plan: give --trunk, --preset or a budget");
  const Checkpoint checkpoint = Checkpoint::open(o.model_dir);
  o.stream.context = o.ctx ? o.ctx : 4096;
  o.stream.batch = plan_batch;
  const PreparedStream p = prepare_streaming(config, checkpoint, o.stream, std::cerr);  // throws kResource when refused
  // The forecast is for a prompt the context holds.
  const uint64_t tokens = std::min<uint64_t>(o.prompt_tokens, o.stream.context);
  std::fprintf(stderr, "%s: %s\n", tool,
               first_token_text(config, p.plan, tokens, first_token_rates(o.read_gbps, o.threads)).c_str());
  std::fprintf(stderr, "%s: the plan fits; a run with these flags would start\n", tool);
  return 0;
}

std::optional<int> apply_early_options(const ModelOptions& o, const RunFlags& run_flags) {
  if (o.quiet) enter_quiet_mode();
  if (o.list_presets) {
    std::fputs(preset_table(o, o.read_gbps, run_flags).c_str(), stdout);
    return 0;
  }
  if (o.model_dir.empty())
    throw Error(ExitCode::kUsage,
                "MODEL_DIR is required: the model directory (config.json, model.safetensors.index.json and "
                "shards); --list-presets alone shows the presets for the real Kimi-K3");
  return std::nullopt;
}

void check_stop_ids(const std::vector<int32_t>& ids, int64_t vocab) {
  for (int32_t id : ids)
    if (id < 0 || id >= vocab)
      throw Error(ExitCode::kUsage,
                  "--stop-id " + std::to_string(id) + " is outside the vocabulary 0.." + std::to_string(vocab - 1));
}

uint64_t peak_rss_bytes() {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0 || ru.ru_maxrss < 0) return 0;
  return static_cast<uint64_t>(ru.ru_maxrss) * 1024;  // ru_maxrss is in KiB on Linux
}

}  // namespace k3
