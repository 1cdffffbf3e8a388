// The command-line options of tools that run the model (k3-forward, k3-chat):
// the model directory, --threads, and the memory-budget flags (--trunk
// --trunk-gb --cache-gb --preset --io-threads --list-presets --plan --ctx
// --stats-json), declared once with one help text, and what they do:
// --list-presets and --plan answer without reading a weight; otherwise the
// weights are built resident or streaming within the budget, and the
// streaming counters are reported at the end.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

#include "kernels/thread_pool.h"
#include "model/config.h"
#include "model/engine.h"
#include "model/resident_weights.h"
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
};

// MODEL_DIR (positional, required) and --threads.
void add_model_options(CLI::App& app, ModelOptions& options);
// The memory-budget flags (README "Memory budgets and streaming").
void add_budget_options(CLI::App& app, ModelOptions& options);

// Handles --list-presets and --plan (printing to stdout/stderr); returns the
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

  Engine& engine() { return *engine_; }
  ThreadPool& pool() { return pool_; }
  StreamingWeights* streaming() { return streaming_.get(); }

  // Marks the end of the prefill (the streaming counters split there).
  void prefill_done();
  // Prints the streaming counters (when streaming) to stderr and writes
  // --stats-json. `extra_json` members are added to the JSON object.
  void report(uint64_t prompt_tokens, uint64_t decode_steps, double prefill_s, double decode_s,
              const std::string& extra_json = "");

 private:
  ModelOptions& options_;
  std::unique_ptr<ResidentWeights> resident_;
  std::unique_ptr<StreamingWeights> streaming_;
  ThreadPool pool_;
  std::unique_ptr<Engine> engine_;
  RunFigures figures_;
};

// Peak resident set of this process in MB (-1 when unknown).
long peak_rss_mb();

}  // namespace k3
