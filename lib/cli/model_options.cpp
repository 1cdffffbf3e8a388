#include "cli/model_options.h"

#include "cli/flag_checks.h"
#include "cli/load_progress.h"
#include "cli/preset_table.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "checkpoint/checkpoint.h"
#include "common/atomic_file_writer.h"
#include "common/cli_limits.h"
#include "common/file.h"
#include "common/progress_meter.h"
#include "common/quiet.h"
#include "cli/tool_version.h"
#include "common/error.h"
#include "model/tensor_manifest.h"

namespace k3 {

void add_model_options(CLI::App& app, ModelOptions& o) {
  app.add_option("MODEL_DIR", o.model_dir,
                 "Model directory: config.json, model.safetensors.index.json and shards (not needed for "
                 "--list-presets, which then shows the real Kimi-K3)");
  app.add_flag("--quiet", o.quiet, "Print nothing on stderr but errors: no plan, progress or summary");
  app.add_option("--threads", o.threads, "Worker threads (default 0: all cores); output is identical for any count")
      ->check(cli::in_range(0, kMaxComputeThreads));
}

void add_budget_options(CLI::App& app, ModelOptions& o) {
  StreamingRequest& r = o.stream;
  app.add_option("--trunk", r.trunk_dir,
                 "Packed trunk from k3-pack: pin --trunk-gb of it in RAM and stream the rest every token");
  app.add_option("--trunk-gb", r.trunk_gb, "GB (1e9 bytes) of trunk layers to pin in RAM (needs --trunk)")
      ->check(cli::finite_range(kMaxGigabytes));
  app.add_option("--cache-gb", r.cache_gb, "GB of routed-expert LRU cache (experts stream from the shards)")
      ->check(cli::finite_range(kMaxGigabytes));
  app.add_option("--preset", r.preset,
                 "Memory preset: min, laptop, desktop, workstation, server, max, or auto (the largest whose forecast "
                 "fits the memory available now; --trunk-gb/--cache-gb/--block-mb "
                 "override it)");
  app.add_option("--block-mb", r.block_mb,
                 "Stream trunk matrices in row blocks of at most MB (1e6 bytes; at least one row of the widest "
                 "matrix; 0: whole layers). Needs --trunk")
      ->check(cli::finite_range(kMaxGigabytes * 1000));
  app.add_flag("--list-presets", o.list_presets,
               "Print each preset's forecast peak RSS and bytes and seconds per generated token for MODEL_DIR (or "
               "the real Kimi-K3 when none is given), then exit");
  app.add_option("--read-gbps", o.read_gbps,
                 "Read bandwidth in GB/s for --list-presets' seconds per token, e.g. the one k3-doctor measured "
                 "(default: 2 GB/s assumed)")
      ->check(cli::in_range(0.001, 1e4));
  app.add_flag("--plan", o.plan_only,
               "Print the memory plan for these budget flags and --ctx (default 4096), then exit: 0 when it fits, "
               "6 when it would be refused. Reads no prompt and no weights");
  app.add_option("--ctx", o.ctx, "Context positions to plan the MLA latent cache for (default: context + --gen)")
      ->check(cli::in_range(0, static_cast<double>(kMaxContext)));
  app.add_option("--io-threads", r.io_threads, "Parallel reads in flight when streaming (default 8)")
      ->check(cli::in_range(1, kMaxIoThreads));
  app.add_option("--stats-json", o.stats_json, "Write the streaming counters to FILE (JSON, written atomically)");
}

std::optional<int> answer_plan_requests(const ModelConfig& config, ModelOptions& o, const char* tool,
                                        uint64_t plan_batch) {
  o.stream.compute_threads = o.threads;
  // Checked before any weight is read; a device or FIFO is written through.
  if (!o.stats_json.empty()) check_output_path(o.stats_json, OutputPolicy::kFileOrStream);
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

std::optional<int> apply_early_options(const ModelOptions& o) {
  if (o.quiet) enter_quiet_mode();
  if (o.list_presets) {
    std::fputs(preset_table(o, o.read_gbps).c_str(), stdout);
    return 0;
  }
  if (o.model_dir.empty())
    throw Error(ExitCode::kUsage,
                "MODEL_DIR is required: the model directory (config.json, model.safetensors.index.json and "
                "shards); --list-presets alone shows the presets for the real Kimi-K3");
  return std::nullopt;
}

LoadedModel::LoadedModel(const ModelConfig& config, const Checkpoint& checkpoint, ModelOptions& o, uint64_t context,
                         uint64_t batch, const char* tool)
    : options_(o), tool_(tool), pool_(o.threads) {
  const auto load_start = std::chrono::steady_clock::now();
  o.stream.compute_threads = o.threads;
  uint64_t plan_batch = batch;
  if (o.stream.active()) {
    o.stream.context = std::max<uint64_t>(o.ctx, context);
    o.stream.batch = batch;
    validate_checkpoint(config, checkpoint);
    PreparedStream prepared = prepare_streaming(config, checkpoint, o.stream, std::cerr);
    figures_.forecast_peak_rss = prepared.plan.peak_rss;
    preset_ = prepared.preset;
    trunk_budget_ = prepared.plan_request.trunk_budget;
    cache_budget_ = prepared.plan_request.cache_budget;
    plan_batch = prepared.plan.batch;
    max_drafts_ = prepared.plan_request.state_snapshots;
    LoadProgress progress(tool);
    streaming_ = std::make_unique<StreamingWeights>(config, checkpoint, o.stream.trunk_dir, std::move(prepared.layout),
                                                    prepared.plan, o.stream.io_threads, progress.callback());
  } else {
    std::fprintf(stderr,
                 "%s: no --trunk or budget: the whole model (trunk and every routed expert) is loaded "
                 "resident; use k3-pack and --trunk/--preset to run in a memory budget\n",
                 tool);
    resident_ = std::make_unique<ResidentWeights>(config, checkpoint, &std::cerr);
    max_drafts_ = o.stream.state_snapshots;
  }
  WeightSource& weights = streaming_ ? static_cast<WeightSource&>(*streaming_) : *resident_;
  engine_ = std::make_unique<Engine>(config, weights, pool_);
  if (streaming_) engine_->set_max_batch(plan_batch);  // the plan's prefill batch (lowered when memory is short)
  if (streaming_) figures_.at_start = streaming_->stats();
  load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
}

void LoadedModel::prefill_done() {
  if (streaming_) last_ = figures_.after_prefill = streaming_->stats();
}

void LoadedModel::pass_done(size_t rows) {
  if (!streaming_) return;
  const StreamStats now = streaming_->stats();
  if (by_rows_.size() <= rows) by_rows_.resize(rows + 1);
  PassSize& p = by_rows_[rows];
  ++p.passes;
  p.trunk_bytes += now.trunk_bytes - last_.trunk_bytes;
  p.expert_bytes += now.expert_bytes - last_.expert_bytes;
  p.experts += now.experts_requested - last_.experts_requested;
  last_ = now;
}

namespace {

std::string generation_json(const GenerationCounters& c, const StreamStats& a, const StreamStats& b,
                            const std::string& by_rows) {
  const double gen = static_cast<double>(c.generated);
  const double passes = static_cast<double>(c.generate_passes);
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "  \"generation\": {\"weight_passes\": %lld, \"generated_tokens\": %lld, \"tokens_per_pass\": %.6f, "
                "\"drafts_proposed\": %lld, \"drafts_accepted\": %lld, \"trunk_bytes_per_generated_token\": %.0f, "
                "\"expert_bytes_per_generated_token\": %.0f, \"passes_by_rows\": [%s]}",
                static_cast<long long>(c.generate_passes), static_cast<long long>(c.generated),
                passes > 0 ? gen / passes : 0.0, static_cast<long long>(c.drafts_proposed),
                static_cast<long long>(c.drafts_accepted), gen > 0 ? static_cast<double>(b.trunk_bytes - a.trunk_bytes) / gen : 0.0,
                gen > 0 ? static_cast<double>(b.expert_bytes - a.expert_bytes) / gen : 0.0, by_rows.c_str());
  return buf;
}

}  // namespace

void LoadedModel::report(const GenerationCounters& c, uint64_t prompt_tokens) {
  if (!streaming_) return;
  figures_.at_end = streaming_->stats();
  figures_.prompt_tokens = prompt_tokens;
  figures_.decode_steps = static_cast<uint64_t>(c.decode_steps);
  figures_.prefill_seconds = c.prefill_seconds;
  figures_.decode_seconds = c.decode_seconds;
  figures_.peak_rss_bytes = static_cast<uint64_t>(std::max(0L, peak_rss_mb())) << 20;
  figures_.direct_io = streaming_->direct_io();
  std::fputs(figures_text(figures_).c_str(), stderr);
  if (c.drafts_proposed > 0) {
    const double gen = static_cast<double>(c.generated);
    std::fprintf(stderr,
                 "k3-forward: speculation: %lld generated in %lld weight passes (%.2f tokens/pass), drafts %lld/%lld "
                 "accepted, per generated token %s trunk + %s experts read\n",
                 static_cast<long long>(c.generated), static_cast<long long>(c.generate_passes),
                 c.generate_passes ? gen / static_cast<double>(c.generate_passes) : 0.0,
                 static_cast<long long>(c.drafts_accepted), static_cast<long long>(c.drafts_proposed),
                 format_bytes(static_cast<uint64_t>(static_cast<double>(figures_.at_end.trunk_bytes - figures_.after_prefill.trunk_bytes) / gen)).c_str(),
                 format_bytes(static_cast<uint64_t>(static_cast<double>(figures_.at_end.expert_bytes - figures_.after_prefill.expert_bytes) / gen)).c_str());
  }
  if (options_.stats_json.empty()) return;
  std::string rows;
  for (size_t r = 0; r < by_rows_.size(); ++r) {
    const PassSize& p = by_rows_[r];
    if (p.passes == 0) continue;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%s{\"rows\": %zu, \"passes\": %llu, \"trunk_bytes_per_pass\": %.0f, \"expert_bytes_per_pass\": %.0f, "
                  "\"experts_per_pass\": %.3f}",
                  rows.empty() ? "" : ", ", r, static_cast<unsigned long long>(p.passes),
                  static_cast<double>(p.trunk_bytes) / p.passes, static_cast<double>(p.expert_bytes) / p.passes,
                  static_cast<double>(p.experts) / p.passes);
    rows += buf;
  }
  std::string j = figures_json(figures_);
  const size_t close = j.rfind('}');
  j = j.substr(0, close);
  while (!j.empty() && (j.back() == '\n' || j.back() == ' ')) j.pop_back();
  j += ",\n" + generation_json(c, figures_.after_prefill, figures_.at_end, rows) + ",\n" + run_json(c);
  for (const std::string& section : extra_stats_)
    if (!section.empty()) j += ",\n" + section;
  j += "\n}\n";
  write_file_atomic(options_.stats_json, j.data(), j.size(), OutputPolicy::kFileOrStream);
}

double LoadedModel::wall_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - options_.started).count();
}

std::string LoadedModel::run_json(const GenerationCounters& c) const {
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "  \"run\": {\"version\": \"%s\", \"threads\": %d, \"io_threads\": %d, \"preset\": \"%s\", "
                "\"trunk_budget_bytes\": %llu, \"cache_budget_bytes\": %llu, \"generated_tokens\": %lld, "
                "\"wall_seconds\": {\"load\": %.6f, \"prefill\": %.6f, \"decode\": %.6f, \"total\": %.6f}}",
                k3_version().c_str(), pool_.size(), options_.stream.io_threads, preset_.c_str(),
                static_cast<unsigned long long>(trunk_budget_), static_cast<unsigned long long>(cache_budget_),
                static_cast<long long>(c.generated), load_seconds_, c.prefill_seconds, c.decode_seconds,
                wall_seconds());
  return buf;
}

int LoadedModel::summarize(const GenerationCounters& c, uint64_t fed, bool interrupted) {
  std::fprintf(stderr,
               "%s: done in %.2f s: load %.2f s, prefill of %llu tokens %.3f s (%.1f tokens/s), %lld generated in "
               "%.3f s (%.4f s/token); %d threads; peak RSS %ld MB\n",
               tool_, wall_seconds(), load_seconds_, static_cast<unsigned long long>(fed), c.prefill_seconds,
               c.prefill_seconds > 0 ? static_cast<double>(fed) / c.prefill_seconds : 0.0,
               static_cast<long long>(c.generated), c.decode_seconds,
               c.generated > 1 ? c.decode_seconds / static_cast<double>(c.generated - 1) : 0.0, pool_.size(),
               peak_rss_mb());
  if (!interrupted) return 0;
  std::fprintf(stderr, "%s: interrupted after %lld generated tokens (they were written)\n", tool_,
               static_cast<long long>(c.generated));
  return static_cast<int>(ExitCode::kInterrupted);
}

void check_stop_ids(const std::vector<int32_t>& ids, int64_t vocab) {
  for (int32_t id : ids)
    if (id < 0 || id >= vocab)
      throw Error(ExitCode::kUsage,
                  "--stop-id " + std::to_string(id) + " is outside the vocabulary 0.." + std::to_string(vocab - 1));
}

long peak_rss_mb() {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
  return ru.ru_maxrss / 1024;  // kilobytes on Linux
}

}  // namespace k3
