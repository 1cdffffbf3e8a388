#include "cli/model_run.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "cli/load_progress.h"
#include "cli/run_figures.h"
#include "cli/tool_version.h"
#include "common/atomic_file_writer.h"
#include "common/byte_format.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/file.h"
#include "common/rate_format.h"
#include "common/tool_main.h"
#include "expert_cache/expert_cache_policy.h"

namespace k3 {

namespace {

ModelParams params_for(const ModelOptions& o, uint64_t context, uint64_t batch) {
  ModelParams params;
  params.threads = o.threads;
  params.stream = o.stream;
  params.context = std::max<uint64_t>(o.ctx, context);
  params.batch = batch;
  params.expert_trace = o.expert_trace;
  params.lookahead_trace = o.lookahead_pairs;
  return params;
}

}  // namespace

ModelPlan plan_model(const ModelConfig& config, const Checkpoint& checkpoint, const ModelOptions& o, uint64_t context,
                     uint64_t batch, std::string& text) {
  ModelParams params = params_for(o, context, batch);
  std::ostringstream log;  // kept for the caller: a refusal stays one line
  params.log = &log;
  ModelPlan plan = Model::plan(config, checkpoint, params);
  text = log.str();
  return plan;
}

std::unique_ptr<Model> load_model(ModelConfig config, Checkpoint checkpoint, const ModelOptions& o, uint64_t context,
                                  uint64_t batch, const ProgressCallback& observe, std::optional<ModelPlan> plan) {
  ModelParams params = params_for(o, context, batch);
  params.log = &std::cerr;
  LoadProgress progress(tool_name());  // lives until the model is loaded: the only time it is called
  params.progress = [&](const char* what, uint64_t done, uint64_t total) {
    progress(what, done, total);
    if (observe) observe(what, done, total);
  };
  if (plan)
    return std::make_unique<Model>(std::move(config), std::move(checkpoint), std::move(params), std::move(*plan));
  return std::make_unique<Model>(std::move(config), std::move(checkpoint), std::move(params));
}

double wall_seconds(const ModelOptions& o) { return seconds_since(o.started); }

void report_device(const Model& model, const ModelOptions& o) {
  const ModelCounters m = model.counters();
  if (m.device && !o.quiet) std::fprintf(stderr, "%s: %s\n", tool_name(), m.device_summary.c_str());
}

namespace {

RunFigures run_figures(const ModelCounters& m, const GenerationCounters& c, uint64_t prompt_tokens) {
  RunFigures f;
  f.streaming = m.streaming;
  f.at_start = m.at_start;
  f.after_prefill = m.after_prefill;
  f.at_end = m.now;
  f.load_bytes = m.load_bytes;
  f.load_seconds = m.streaming ? m.at_start.load_seconds : m.load_seconds;
  f.forecast_peak_rss = m.forecast_peak_rss;
  f.prompt_tokens = prompt_tokens;
  f.decode_steps = static_cast<uint64_t>(c.decode_steps);
  f.generated = static_cast<uint64_t>(c.generated);
  f.prefill_seconds = c.prefill_seconds;
  f.decode_seconds = c.decode_seconds;
  f.peak_rss_bytes = peak_rss_bytes();
  f.direct_io = m.direct_io;
  return f;
}

}  // namespace

void write_stats_json(const Model& model, const ModelOptions& o, const GenerationCounters& c, uint64_t prompt_tokens,
                      const std::string& extra_json) {
  if (o.stats_json.empty()) return;
  const ModelCounters m = model.counters();
  RunInfo run;
  run.version = k3_version();
  run.threads = model.pool().size();
  run.io_threads = o.stream.io_threads;
  run.preset = m.preset;
  run.trunk_budget = m.trunk_budget;
  run.cache_budget = m.cache_budget;
  run.expert_cache_policy = expert_cache_policy_name(o.stream.cache_policy);
  run.expert_lookahead = o.stream.expert_lookahead;
  run.load_seconds = m.load_seconds;
  run.total_seconds = wall_seconds(o);
  std::string j = stats_json(run_figures(m, c, prompt_tokens), c, m, run);
  std::string extra = extra_json;
  for (const std::string& member : {device_stats_member(m), expert_cache_loan_member(m), layer_hold_member(m)})
    if (!member.empty()) extra += (extra.empty() ? "" : ",\n") + member;
  if (!extra.empty()) {
    // One more member (already JSON, e.g. --draft's counters) before the
    // closing brace of the object stats_json wrote.
    const size_t close = j.rfind('}');
    j = j.substr(0, close);
    while (!j.empty() && (j.back() == '\n' || j.back() == ' ')) j.pop_back();
    j += ",\n" + extra + "\n}\n";
  }
  write_file_atomic(o.stats_json, j.data(), j.size(), OutputPolicy::kFileOrStream);
}

void report_run(Model& model, const ModelOptions& o, const GenerationCounters& c, uint64_t prompt_tokens,
                const std::string& extra_json) {
  model.finish_expert_trace();
  const ModelCounters m = model.counters();
  const RunFigures f = run_figures(m, c, prompt_tokens);
  if (m.streaming) std::fputs(figures_text(f).c_str(), stderr);
  if (m.streaming && c.drafts_proposed > 0) {
    const double gen = static_cast<double>(c.generated);
    std::fprintf(stderr,
                 "%s: speculation: %lld generated in %lld weight passes (%.2f tokens/pass), drafts %lld/%lld "
                 "accepted, per generated token %s trunk + %s experts read\n",
                 tool_name(), static_cast<long long>(c.generated), static_cast<long long>(c.generate_passes),
                 c.generate_passes ? gen / static_cast<double>(c.generate_passes) : 0.0,
                 static_cast<long long>(c.drafts_accepted), static_cast<long long>(c.drafts_proposed),
                 format_bytes(static_cast<uint64_t>(
                                  static_cast<double>(f.at_end.trunk_bytes - f.after_prefill.trunk_bytes) / gen))
                     .c_str(),
                 format_bytes(static_cast<uint64_t>(
                                  static_cast<double>(f.at_end.expert_bytes - f.after_prefill.expert_bytes) / gen))
                     .c_str());
  }
  write_stats_json(model, o, c, prompt_tokens, extra_json);
}

int summarize_run(const Model& model, const ModelOptions& o, const GenerationCounters& c, uint64_t fed,
                  bool interrupted) {
  const ModelCounters m = model.counters();
  std::fprintf(stderr,
               "%s: done in %.2f s: load %.2f s, prefill of %llu tokens %.3f s (%s), %lld generated in "
               "%.3f s (%s); %d threads; peak RSS %s\n",
               tool_name(), wall_seconds(o), m.load_seconds, static_cast<unsigned long long>(fed), c.prefill_seconds,
               tokens_per_second(c.prefill_seconds, static_cast<int64_t>(fed)).c_str(),
               static_cast<long long>(c.generated), c.decode_seconds,
               seconds_per_token(c.decode_seconds, c.generated).c_str(), model.pool().size(),
               format_bytes(peak_rss_bytes()).c_str());
  report_device(model, o);
  if (!interrupted) return 0;
  std::fprintf(stderr, "%s: interrupted after %lld generated tokens (they were written)\n", tool_name(),
               static_cast<long long>(c.generated));
  return static_cast<int>(ExitCode::kInterrupted);
}

}  // namespace k3
