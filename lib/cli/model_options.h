// Layer cli: what the tools share on the command line (options, stdout, interrupts, token-id input).
//
// The command-line options of tools that run the model (k3-forward, k3-chat):
// the model directory, --threads, and the memory-budget flags (--trunk
// --trunk-gb --cache-gb --expert-cache-policy --preset --io-threads
// --list-presets --plan --ctx --stats-json --expert-lookahead, and k3-forward's
// --expert-trace), declared once with one help text, and what they do:
// --list-presets and --plan answer without reading a weight; otherwise the
// model is loaded (engine/model.h) by cli/model_run.h, which reports its
// counters at the end.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "expert_cache/expert_trace.h"
#include "model/config.h"
#include "runtime/streaming_setup.h"

namespace k3 {

class Checkpoint;

struct ModelOptions {
  std::string model_dir;
  int threads = 0;  // 0: all cores
  RunRequest stream;
  bool list_presets = false;
  bool plan_only = false;
  uint64_t ctx = 0;  // 0: what the run needs
  std::string stats_json;
  std::string expert_trace;     // --expert-trace: record the expert requests (expert_cache/expert_trace.h)
  std::string lookahead_trace;  // --expert-lookahead-from: perfect guesses from a trace (expert_trace_oracle.h)
  std::vector<ExpertRequest> lookahead_pairs;  // its pairs, read and checked by answer_plan_requests
  double read_gbps = 0;                        // --list-presets' and --plan's read bandwidth; 0: the assumed one
  uint64_t prompt_tokens = 4000;               // --prompt-tokens: the time-to-first-token forecast's prompt
  bool quiet = false;                          // --quiet: nothing on stderr but errors
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();  // the run's wall clock
};

// MODEL_DIR (positional; required unless --list-presets) and --threads.
void add_model_options(CLI::App& app, ModelOptions& options);
// What --ctx and --plan default to differs by tool: their help text
// (k3-forward's by default; k3-chat and k3-serve give their own).
struct ContextHelp {
  const char* ctx = "Context positions to plan the MLA latent cache for (default: context + --gen)";
  const char* plan =
      "Print the memory plan for these budget flags and --ctx (default 4096), then exit: 0 when it fits, "
      "6 when it would be refused. Reads no prompt and no weights";
};

// The memory-budget flags (README "Memory budgets and streaming"), and
// --expert-trace when `expert_trace` (a tool that publishes it through
// report_run).
void add_budget_options(CLI::App& app, ModelOptions& options, bool expert_trace = false, const ContextHelp& help = {});

// What a tool's own flags add to every preset's plan (--draft, --spec,
// k3-serve's slots and --keep-mb), set into the request for the model's
// config; --list-presets counts it as --preset auto does.
using RunFlags = std::function<void(const ModelConfig& config, RunRequest& request)>;

// Right after parsing: --quiet takes effect (common/quiet.h); --list-presets
// (for MODEL_DIR, or the real K3 without one) prints the preset table, with
// what `run_flags` adds, and returns 0; otherwise MODEL_DIR must be given
// (kUsage).
std::optional<int> apply_early_options(const ModelOptions& options, const RunFlags& run_flags = nullptr);

// Handles --plan (printing the plan to stderr); returns the
// exit status when one of them was given, nothing otherwise. --plan plans
// for `plan_batch` rows per pass.
std::optional<int> answer_plan_requests(const ModelConfig& config, ModelOptions& options, const char* tool,
                                        uint64_t plan_batch = 256);

// --stop-id values must be ids of the vocabulary (kUsage otherwise).
void check_stop_ids(const std::vector<int32_t>& ids, int64_t vocab_size);

// Peak resident set of this process in bytes (0 when unknown).
uint64_t peak_rss_bytes();

}  // namespace k3
