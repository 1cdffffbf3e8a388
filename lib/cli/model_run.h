// The model a tool runs on (engine/model.h) loaded from its flags, and what
// the tool prints about it: the resident-load note, load progress and the
// memory plan on stderr while loading; at the end the streaming counters,
// --stats-json and the one-line run summary. The model itself prints nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "checkpoint/checkpoint.h"
#include "cli/model_options.h"
#include "engine/model.h"
#include "engine/session.h"

namespace k3 {

// Loads the model for these flags: `context` positions the plan must hold
// (at least --ctx), `batch` rows per weight pass. Without any budget flag
// everything is resident; with one the plan is printed and checked (refusal:
// Error(kResource), exit 6) before allocating.
// `observe`, when given, also receives the load progress (k3-serve's /health).
// `plan`, when given, is plan_model's for the same flags: the model loads
// from it without planning again.
std::unique_ptr<Model> load_model(ModelConfig config, Checkpoint checkpoint, const ModelOptions& options,
                                  uint64_t context, uint64_t batch, const ProgressCallback& observe = nullptr,
                                  std::optional<ModelPlan> plan = std::nullopt);
// The checks and memory plan of load_model alone (Model::plan): the same
// refusals, before anything loads, a refusal one line. The plan text goes
// to `text`, for the caller to print when it is ready to (k3-serve: once it
// holds its port). Hand the plan to load_model.
ModelPlan plan_model(const ModelConfig& config, const Checkpoint& checkpoint, const ModelOptions& options,
                     uint64_t context, uint64_t batch, std::string& text);

// Publishes --expert-trace (Model::finish_expert_trace), prints the
// streaming counters (when streaming) to stderr and writes --stats-json (resident runs too, marked "streaming": false),
// with the generation figures: weight passes, generated tokens, tokens per pass, drafts, bytes per generated token, and
// per pass size the experts read (the union over its rows). See cli/run_figures.h; `extra_json`, when not empty, is one
// more member ("name": {...}, e.g. --draft's counters).
void report_run(Model& model, const ModelOptions& options, const GenerationCounters& counters, uint64_t prompt_tokens,
                const std::string& extra_json = {});

// Only the --stats-json file (nothing when the flag was not given): k3-chat
// writes it at the end of the conversation, for all its turns.
void write_stats_json(const Model& model, const ModelOptions& options, const GenerationCounters& counters,
                      uint64_t prompt_tokens, const std::string& extra_json = {});

// The run's one-line summary on stderr (and the interruption note); returns
// the exit status: 0, or 130 when `interrupted`.
int summarize_run(const Model& model, const ModelOptions& options, const GenerationCounters& counters,
                  uint64_t prompt_tokens, bool interrupted);

// --gpu's line on stderr (unless --quiet): the device, the products it
// ran, the bytes uploaded (ComputeBackend::describe). Nothing without one.
void report_device(const Model& model, const ModelOptions& options);

// Seconds since the tool started (ModelOptions::started).
double wall_seconds(const ModelOptions& options);

}  // namespace k3
