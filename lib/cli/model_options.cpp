#include "cli/model_options.h"

#include "cli/flag_checks.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "checkpoint/checkpoint.h"
#include "common/atomic_file_writer.h"
#include "common/file.h"
#include "common/error.h"
#include "model/tensor_manifest.h"

namespace k3 {

void add_model_options(CLI::App& app, ModelOptions& o) {
  app.add_option("MODEL_DIR", o.model_dir, "Model directory: config.json, model.safetensors.index.json and shards")
      ->required();
  app.add_option("--threads", o.threads, "Worker threads (default 0: all cores); output is identical for any count")
      ->check(cli::non_negative());
}

void add_budget_options(CLI::App& app, ModelOptions& o) {
  StreamingRequest& r = o.stream;
  app.add_option("--trunk", r.trunk_dir,
                 "Packed trunk from k3-pack: pin --trunk-gb of it in RAM and stream the rest every token");
  app.add_option("--trunk-gb", r.trunk_gb, "GB (1e9 bytes) of trunk layers to pin in RAM (needs --trunk)")
      ->check(cli::non_negative());
  app.add_option("--cache-gb", r.cache_gb, "GB of routed-expert LRU cache (experts stream from the shards)")
      ->check(cli::non_negative());
  app.add_option("--preset", r.preset,
                 "Memory preset: laptop, desktop, workstation, server, max (--trunk-gb/--cache-gb override it)");
  app.add_flag("--list-presets", o.list_presets, "Print each preset's forecast peak RSS for this model, then exit");
  app.add_flag("--plan", o.plan_only,
               "Print the memory plan for these budget flags and --ctx (default 4096), then exit: 0 when it fits, "
               "6 when it would be refused. Reads no prompt and no weights");
  app.add_option("--ctx", o.ctx, "Context positions to plan the MLA latent cache for (default: context + --gen)");
  app.add_option("--io-threads", r.io_threads, "Parallel reads in flight when streaming (default 8)")
      ->check(cli::positive_integer());
  app.add_option("--stats-json", o.stats_json, "Write the streaming counters to FILE (JSON, written atomically)");
}

std::optional<int> answer_plan_requests(const ModelConfig& config, ModelOptions& o, const char* tool,
                                        uint64_t plan_batch) {
  o.stream.compute_threads = o.threads;
  if (o.list_presets) {
    const Checkpoint checkpoint = Checkpoint::open(o.model_dir);
    o.stream.context = o.ctx ? o.ctx : 4096;
    std::fputs(presets_table(config, checkpoint, o.stream).c_str(), stdout);
    return 0;
  }
  if (!o.plan_only) return std::nullopt;
  if (!o.stream.active())
    throw Error(ExitCode::kUsage, "--plan shows a streaming plan: give --trunk, --preset or a budget");
  const Checkpoint checkpoint = Checkpoint::open(o.model_dir);
  o.stream.context = o.ctx ? o.ctx : 4096;
  o.stream.batch = plan_batch;
  prepare_streaming(config, checkpoint, o.stream, std::cerr);  // throws kResource when refused
  std::fprintf(stderr, "%s: the plan fits; a run with these flags would start\n", tool);
  return 0;
}

LoadedModel::LoadedModel(const ModelConfig& config, const Checkpoint& checkpoint, ModelOptions& o, uint64_t context,
                         uint64_t batch, const char* tool)
    : options_(o), pool_(o.threads) {
  o.stream.compute_threads = o.threads;
  if (o.stream.active()) {
    o.stream.context = std::max<uint64_t>(o.ctx, context);
    o.stream.batch = batch;
    validate_checkpoint(config, checkpoint);
    PreparedStream prepared = prepare_streaming(config, checkpoint, o.stream, std::cerr);
    figures_.forecast_peak_rss = prepared.plan.peak_rss;
    streaming_ = std::make_unique<StreamingWeights>(config, checkpoint, o.stream.trunk_dir,
                                                    std::move(prepared.layout), prepared.plan, o.stream.io_threads);
  } else {
    std::fprintf(stderr,
                 "%s: no --trunk or budget: the whole model (trunk and every routed expert) is loaded "
                 "resident; use k3-pack and --trunk/--preset to run in a memory budget\n",
                 tool);
    resident_ = std::make_unique<ResidentWeights>(config, checkpoint, &std::cerr);
  }
  WeightSource& weights = streaming_ ? static_cast<WeightSource&>(*streaming_) : *resident_;
  engine_ = std::make_unique<Engine>(config, weights, pool_);
  if (streaming_) figures_.at_start = streaming_->stats();
}

void LoadedModel::prefill_done() {
  if (streaming_) figures_.after_prefill = streaming_->stats();
}

void LoadedModel::report(uint64_t prompt_tokens, uint64_t decode_steps, double prefill_s, double decode_s,
                         const std::string& extra_json) {
  if (!streaming_) return;
  figures_.at_end = streaming_->stats();
  figures_.prompt_tokens = prompt_tokens;
  figures_.decode_steps = decode_steps;
  figures_.prefill_seconds = prefill_s;
  figures_.decode_seconds = decode_s;
  figures_.peak_rss_bytes = static_cast<uint64_t>(std::max(0L, peak_rss_mb())) << 20;
  figures_.direct_io = streaming_->direct_io();
  std::fputs(figures_text(figures_).c_str(), stderr);
  if (!options_.stats_json.empty()) {
    std::string j = figures_json(figures_);
    if (!extra_json.empty()) {
      const size_t close = j.rfind('}');
      j = j.substr(0, close);
      while (!j.empty() && (j.back() == '\n' || j.back() == ' ')) j.pop_back();
      j += ",\n" + extra_json + "\n}\n";
    }
    write_file_atomic(options_.stats_json, j.data(), j.size());
  }
}

long peak_rss_mb() {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
  return ru.ru_maxrss / 1024;  // kilobytes on Linux
}

}  // namespace k3
