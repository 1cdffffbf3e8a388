// Layer cli: what the tools share on the command line (options, stdout, interrupts, token-id input).
//
// The command-line options of tools that run the model (k3-forward, k3-chat):
// the model directory, --threads, and the memory-budget flags (--trunk
// --trunk-gb --cache-gb --preset --io-threads --list-presets --plan --ctx
// --stats-json), declared once with one help text, and what they do:
// --list-presets and --plan answer without reading a weight; otherwise the
// weights are built resident or streaming within the budget, and the
// streaming counters are reported at the end.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "generate/generation_session.h"
#include "kernels/thread_pool.h"
#include "model/config.h"
#include "model/engine.h"
#include "runtime/resident_weights.h"
#include "runtime/streaming_setup.h"
#include "runtime/streaming_weights.h"

namespace k3 {

class Checkpoint;

struct ModelOptions {
  std::string model_dir;
  int threads = 0;  // 0: all cores
  StreamingRequest stream;
  bool list_presets = false;
  bool plan_only = false;
  uint64_t ctx = 0;  // 0: what the run needs
  std::string stats_json;
  double read_gbps = 0;  // --list-presets' read bandwidth; 0: the assumed one
  bool quiet = false;    // --quiet: nothing on stderr but errors
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();  // the run's wall clock
};

// MODEL_DIR (positional; required unless --list-presets) and --threads.
void add_model_options(CLI::App& app, ModelOptions& options);
// The memory-budget flags (README "Memory budgets and streaming").
void add_budget_options(CLI::App& app, ModelOptions& options);

// Right after parsing: --quiet takes effect (common/quiet.h); --list-presets
// (for MODEL_DIR, or the real K3 without one) prints the preset table and
// returns 0; otherwise MODEL_DIR must be given (kUsage).
std::optional<int> apply_early_options(const ModelOptions& options);

// Handles --plan (printing the plan to stderr); returns the
// exit status when one of them was given, nothing otherwise. --plan plans
// for `plan_batch` rows per pass.
std::optional<int> answer_plan_requests(const ModelConfig& config, ModelOptions& options, const char* tool,
                                        uint64_t plan_batch = 256);

// The weights a run computes with, the thread pool and the engine over them.
// Without any budget flag everything is resident; with one the plan is
// printed and checked (refusal: Error(kResource), exit 6) before allocating.
class LoadedModel {
 public:
  // `context`: positions the plan must hold; `batch`: rows per weight pass.
  LoadedModel(const ModelConfig& config, const Checkpoint& checkpoint, ModelOptions& options, uint64_t context,
              uint64_t batch, const char* tool);
  const char* tool() const { return tool_; }

  Engine& engine() { return *engine_; }
  // Drafts per weight pass the plan holds rollback copies for: the request's
  // (ModelOptions::stream.state_snapshots), or fewer when the default was
  // lowered to fit (StreamingRequest::snapshots_optional).
  size_t max_drafts() const { return max_drafts_; }
  ThreadPool& pool() { return pool_; }
  StreamingWeights* streaming() { return streaming_.get(); }

  // Marks the end of the prefill (the streaming counters split there).
  void prefill_done();
  // After each generation pass of `rows` rows (GenerationSession's pass
  // observer): attributes the bytes and experts read to passes of that size.
  void pass_done(size_t rows);
  // Prints the streaming counters (when streaming) to stderr and writes
  // --stats-json, with the generation figures: weight passes, generated
  // tokens, tokens per pass, drafts, bytes per generated token, and per
  // pass size the experts read (the union over its rows).
  void report(const GenerationCounters& counters, uint64_t prompt_tokens);
  // The run's one-line summary on stderr (and the interruption note); returns
  // the exit status: 0, or 130 when `interrupted`.
  int summarize(const GenerationCounters& counters, uint64_t prompt_tokens, bool interrupted);
  // A section report() adds to --stats-json ("name": {...}, e.g. the draft's).
  void add_stats_section(std::string json) { extra_stats_.push_back(std::move(json)); }
  // Seconds since the tool started (ModelOptions::started).
  double wall_seconds() const;

 private:
  // --stats-json's "run": version, threads, preset and budgets, wall times.
  std::string run_json(const GenerationCounters& counters) const;

  ModelOptions& options_;
  const char* tool_;
  std::unique_ptr<ResidentWeights> resident_;
  std::unique_ptr<StreamingWeights> streaming_;
  ThreadPool pool_;
  std::unique_ptr<Engine> engine_;
  RunFigures figures_;
  double load_seconds_ = 0;
  std::string preset_;  // the preset the budgets came from ("auto" resolved), or empty
  uint64_t trunk_budget_ = 0, cache_budget_ = 0;
  struct PassSize {
    uint64_t passes = 0, trunk_bytes = 0, expert_bytes = 0, experts = 0;
  };
  std::vector<PassSize> by_rows_;  // index: rows per pass
  std::vector<std::string> extra_stats_;
  size_t max_drafts_ = 0;
  StreamStats last_;
};

// --stop-id values must be ids of the vocabulary (kUsage otherwise).
void check_stop_ids(const std::vector<int32_t>& ids, int64_t vocab_size);

// Peak resident set of this process in MB (-1 when unknown).
long peak_rss_mb();

}  // namespace k3
