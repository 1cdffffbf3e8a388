#include "cli/model_run.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cli/load_progress.h"
#include "cli/tool_version.h"
#include "common/atomic_file_writer.h"
#include "common/error.h"
#include "common/file.h"
#include "common/progress_meter.h"
#include "common/tool_main.h"

namespace k3 {

std::unique_ptr<Model> load_model(ModelConfig config, Checkpoint checkpoint, const ModelOptions& o, uint64_t context,
                                  uint64_t batch) {
  ModelParams params;
  params.threads = o.threads;
  params.stream = o.stream;
  params.context = std::max<uint64_t>(o.ctx, context);
  params.batch = batch;
  params.log = &std::cerr;
  if (!o.stream.active())
    std::fprintf(stderr,
                 "%s: no --trunk or budget: the whole model (trunk and every routed expert) is loaded "
                 "resident; use k3-pack and --trunk/--preset to run in a memory budget\n",
                 tool_name());
  LoadProgress progress(tool_name());  // lives until the model is loaded: the only time it is called
  params.progress = progress.callback();
  auto model = std::make_unique<Model>(std::move(config), std::move(checkpoint), std::move(params));
  return model;
}

double wall_seconds(const ModelOptions& o) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - o.started).count();
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

// --stats-json's "run": version, threads, preset and budgets, wall times.
std::string run_json(const Model& model, const ModelOptions& o, const ModelCounters& m, const GenerationCounters& c) {
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "  \"run\": {\"version\": \"%s\", \"threads\": %d, \"io_threads\": %d, \"preset\": \"%s\", "
                "\"trunk_budget_bytes\": %llu, \"cache_budget_bytes\": %llu, \"generated_tokens\": %lld, "
                "\"wall_seconds\": {\"load\": %.6f, \"prefill\": %.6f, \"decode\": %.6f, \"total\": %.6f}}",
                k3_version().c_str(), model.pool().size(), o.stream.io_threads, m.preset.c_str(),
                static_cast<unsigned long long>(m.trunk_budget), static_cast<unsigned long long>(m.cache_budget),
                static_cast<long long>(c.generated), m.load_seconds, c.prefill_seconds, c.decode_seconds,
                wall_seconds(o));
  return buf;
}

}  // namespace

void report_run(const Model& model, const ModelOptions& o, const GenerationCounters& c, uint64_t prompt_tokens,
                const std::string& extra_json) {
  const ModelCounters m = model.counters();
  if (!m.streaming) return;
  RunFigures f;
  f.at_start = m.at_start;
  f.after_prefill = m.after_prefill;
  f.at_end = m.now;
  f.forecast_peak_rss = m.forecast_peak_rss;
  f.prompt_tokens = prompt_tokens;
  f.decode_steps = static_cast<uint64_t>(c.decode_steps);
  f.prefill_seconds = c.prefill_seconds;
  f.decode_seconds = c.decode_seconds;
  f.peak_rss_bytes = static_cast<uint64_t>(std::max(0L, peak_rss_mb())) << 20;
  f.direct_io = m.direct_io;
  std::fputs(figures_text(f).c_str(), stderr);
  if (c.drafts_proposed > 0) {
    const double gen = static_cast<double>(c.generated);
    std::fprintf(stderr,
                 "%s: speculation: %lld generated in %lld weight passes (%.2f tokens/pass), drafts %lld/%lld "
                 "accepted, per generated token %s trunk + %s experts read\n",
                 tool_name(), static_cast<long long>(c.generated), static_cast<long long>(c.generate_passes),
                 c.generate_passes ? gen / static_cast<double>(c.generate_passes) : 0.0,
                 static_cast<long long>(c.drafts_accepted), static_cast<long long>(c.drafts_proposed),
                 format_bytes(static_cast<uint64_t>(static_cast<double>(f.at_end.trunk_bytes - f.after_prefill.trunk_bytes) / gen)).c_str(),
                 format_bytes(static_cast<uint64_t>(static_cast<double>(f.at_end.expert_bytes - f.after_prefill.expert_bytes) / gen)).c_str());
  }
  if (o.stats_json.empty()) return;
  std::string rows;
  for (size_t r = 0; r < m.passes_by_rows.size(); ++r) {
    const PassAccount& p = m.passes_by_rows[r];
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
  std::string j = figures_json(f);
  const size_t close = j.rfind('}');
  j = j.substr(0, close);
  while (!j.empty() && (j.back() == '\n' || j.back() == ' ')) j.pop_back();
  j += ",\n" + generation_json(c, f.after_prefill, f.at_end, rows) + ",\n" + run_json(model, o, m, c);
  if (!extra_json.empty()) j += ",\n" + extra_json;
  j += "\n}\n";
  write_file_atomic(o.stats_json, j.data(), j.size(), OutputPolicy::kFileOrStream);
}

int summarize_run(const Model& model, const ModelOptions& o, const GenerationCounters& c, uint64_t fed,
                  bool interrupted) {
  const ModelCounters m = model.counters();
  std::fprintf(stderr,
               "%s: done in %.2f s: load %.2f s, prefill of %llu tokens %.3f s (%.1f tokens/s), %lld generated in "
               "%.3f s (%.4f s/token); %d threads; peak RSS %ld MB\n",
               tool_name(), wall_seconds(o), m.load_seconds, static_cast<unsigned long long>(fed), c.prefill_seconds,
               c.prefill_seconds > 0 ? static_cast<double>(fed) / c.prefill_seconds : 0.0,
               static_cast<long long>(c.generated), c.decode_seconds,
               c.generated > 1 ? c.decode_seconds / static_cast<double>(c.generated - 1) : 0.0,
               model.pool().size(), peak_rss_mb());
  if (!interrupted) return 0;
  std::fprintf(stderr, "%s: interrupted after %lld generated tokens (they were written)\n", tool_name(),
               static_cast<long long>(c.generated));
  return static_cast<int>(ExitCode::kInterrupted);
}

}  // namespace k3
