// Layer engine: the model object every front end runs on (open, plan, load, sessions, counters); prints nothing.
//
// A k3::Model is a checkpoint loaded to compute with: the weights (resident,
// or streamed within a memory budget), the thread pool and the ForwardPass over
// them, and the accounting of what each weight pass read. Sessions (one
// sequence each, engine/session.h) are created from it; several of them can
// be stepped together in one weight pass (Model::step_rows,
// Model::decode_together). Front ends reach the forward pass and lib/generate
// only through this object and its sessions.
//
//   k3::ModelParams params;
//   params.stream.preset = "laptop";            // or budgets; nothing: all resident
//   params.context = 8192;                      // positions the plan must hold
//   params.log = &std::cerr;                    // the plan text; nullptr: silent
//   params.progress = my_progress;              // "pinning trunk" ... (optional)
//   auto model = k3::Model::open("/models/k3", params);   // plans, then loads
//   k3::Session s = model->session({.stop = k3::StopConditions(model->config().eos_token_ids, {}, false)});
//   s.prefill(prompt_ids);
//   s.generate(64, [](int32_t id) { std::printf("%d\n", id); });
//   const k3::ModelCounters c = model->counters();      // bytes read per pass size, ...
//
// What fails how (k3::Error, common/error.h): a missing or malformed
// config, index, shard or trunk is kBadModel (exit 3), a failed read kIo (5);
// a memory plan whose forecast exceeds the memory available is refused with
// kResource (6) before anything large is allocated, the plan written to `log`
// first; an unknown preset or inconsistent budgets are kUsage (2); an id
// outside the vocabulary is kBadInput (4) before a session's state changes.
// Nothing is printed unless `log` is given; load progress goes only to
// `progress`.
//
// Thread safety: none of the calls may run concurrently. A Model and all of
// its sessions are driven from one thread at a time (a server calls them from
// its one scheduler thread and hands results to other threads itself),
// counters() included; the compute and I/O threads are the model's own.
// Different Model objects are independent. A Model is neither copied nor
// moved (the engine refers to its parts); sessions must not outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "common/progress_callback.h"
#include "common/thread_pool.h"
#include "expert_cache/expert_trace_oracle.h"
#include "expert_cache/expert_trace_recorder.h"
#include "kernels/compute_backend.h"
#include "model/config.h"
#include "model/layer_tap.h"
#include "model/sequence_state.h"
#include "model/weight_source.h"
#include "runtime/device_plan.h"
#include "runtime/resident_weights.h"
#include "runtime/streaming_setup.h"
#include "runtime/streaming_weights.h"
#include "sampling/generation_options.h"
#include "state/save_point.h"

namespace k3 {

// lib/generate and the forward pass stay behind this header (model.cpp).
class ForwardPass;
class GenerationSession;
class Session;
namespace kernels {
class ComputeBackend;
}

// How to load a model (cf. a runtime config: budgets and callbacks).
struct ModelParams {
  int threads = 0;              // compute threads; 0: all cores (output identical for any count)
  RunRequest stream;            // trunk, budgets, preset; none given (!stream.active()): all resident
  uint64_t context = 0;         // positions the memory plan must hold per sequence
  uint64_t batch = 256;         // rows per weight pass wanted (the plan may lower it)
  std::ostream* log = nullptr;  // the memory plan and loading notes; nullptr: nowhere
  ProgressCallback progress;    // long start-up steps (pinning, checking the trunk)
  // Record every (layer, expert) the model asks for into this file
  // (expert_cache/expert_trace.h's format); it appears at finish_expert_trace().
  std::string expert_trace;
  // --expert-lookahead-from: guess each layer's experts from this trace of
  // the same run (expert_cache/expert_trace_oracle.h: its pairs, as
  // read_expert_trace returns them) instead of with the router.
  std::vector<ExpertRequest> lookahead_trace;
};

// A model's checks and memory plan, made before anything loads
// (Model::plan): a server plans, listens, then loads from this plan without
// planning again.
struct ModelPlan {
  RunRequest request;                    // as planned: context, batch and threads set
  std::optional<PreparedStream> stream;  // the streaming plan; empty: everything resident
  // The --gpu device's bytes (runtime/device_plan.h): its products, of which
  // the chunk's block states and a layer's weights kept there; all 0: no device.
  DevicePlan device_plan;
  // The request's device (RunRequest::gpu_device), opened and probed by the
  // plan, before anything is said, so its refusal is one line; null: none.
  std::shared_ptr<kernels::ComputeBackend> device;
  double seconds = 0;  // planning time (counted in ModelCounters::load_seconds)
};

// What one size of weight pass read, summed over the passes of that size.
struct PassAccount {
  uint64_t passes = 0, trunk_bytes = 0, expert_bytes = 0, experts = 0;
};

// The model's counters, as plain data.
struct ModelCounters {
  bool streaming = false;                       // weights streamed within a budget (else all resident)
  bool direct_io = false;                       // streaming files opened with O_DIRECT
  double load_seconds = 0;                      // planning and loading
  uint64_t load_bytes = 0;                      // read while loading: the pinned trunk, or every weight when resident
  std::string preset;                           // the preset the budgets came from ("auto" resolved), or empty
  uint64_t trunk_budget = 0, cache_budget = 0;  // bytes (streaming)
  uint64_t forecast_peak_rss = 0;               // the plan's forecast (streaming)
  uint64_t max_batch = 0;                       // rows per weight pass the engine runs
  uint64_t tokens_per_read = 0;                 // prompt tokens one read of the weights covers (prefill chunk)
  uint64_t spill_written_bytes = 0;             // the prefill chunk's spill file: written
  uint64_t spill_read_bytes = 0;                //   and read back (0: no spill file)
  // The sequence state lent to each prefill chunk (its file: written and
  // read back; 0: not lent).
  uint64_t state_loan_written_bytes = 0, state_loan_read_bytes = 0;
  uint64_t cache_lent_bytes = 0;  // the expert cache beyond the chunk's slots, lent to each prefill chunk
  uint64_t hold_bytes = 0, pinned_lent_bytes = 0;  // a held chunk's buffer, the pinned layers lent to it
  size_t max_drafts = 0;                           // drafts per pass the plan holds rollback copies for
  // --draft: the plan streams the draft's matrices in row blocks of this
  // many bytes (0: the draft is resident).
  uint64_t draft_block_bytes = 0;
  StreamStats at_start, after_prefill, now;  // streaming counters (zero when resident)
  // Index: rows per pass (the generation passes reported by pass_done()).
  // Passes are counted resident too; bytes and experts only when streaming.
  std::vector<PassAccount> passes_by_rows;
  // The matrix-product device (--gpu), when one runs them: the plan's device
  // bytes, and what it has done (exact counts).
  bool device = false;
  uint64_t device_plan_bytes = 0;
  kernels::ComputeBackendCounters device_counters;
  std::string device_summary;  // its one line (ComputeBackend::describe)
};

class Model {
 public:
  // Plans (refusal: kResource) and loads `checkpoint`; keeps both.
  Model(ModelConfig config, Checkpoint checkpoint, ModelParams params);
  // Loads from `plan`, made by Model::plan for the same config, checkpoint
  // and params; plans nothing again.
  Model(ModelConfig config, Checkpoint checkpoint, ModelParams params, ModelPlan plan);
  // Reads config.json and the index of `model_dir`, then as above.
  static std::unique_ptr<Model> open(const std::string& model_dir, ModelParams params);
  // The constructor's checks and memory plan alone (the same refusals,
  // kResource/kUsage/kBadModel; the plan text on params.log first), nothing
  // loaded: a server refuses a budget that does not fit before it listens,
  // then loads from the plan while /health reports the progress.
  static ModelPlan plan(const ModelConfig& config, const Checkpoint& checkpoint, const ModelParams& params);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const { return config_; }
  const Checkpoint& checkpoint() const { return checkpoint_; }
  const ModelParams& params() const { return params_; }
  ForwardPass& forward_pass() { return *engine_; }
  // Rows one weight pass runs at most (the plan's batch).
  size_t max_batch() const;
  // Prompt tokens one read of the weights covers (the layer-major prefill's chunk).
  size_t tokens_per_read() const;
  // Where the weights come from (a draft model shares its streams).
  WeightSource& weights();
  // A layer tap sees every layer's input as passes run (a draft model's
  // context); nullptr: none.
  void set_layer_tap(LayerTap* tap);
  // Where a prompt's matrix products run (--gpu: a Vulkan device, same
  // bits); nullptr: the CPU kernels. The caller keeps it alive. A run whose
  // request names a device (RunRequest::gpu_device) has it opened by the
  // plan, before any weight is read, and installed here. The device takes a
  // prompt chunk's products (ForwardPass::forward_chunk) and those of a
  // shared pass carrying at least kDevicePassPromptRows prompt rows
  // (step_rows); decode passes stay on the CPU.
  void set_compute_backend(kernels::ComputeBackend* backend);
  static constexpr size_t kDevicePassPromptRows = 64;
  // Runs `ids` through the forward pass from an empty sequence, computing no
  // logits: the layer tap sees them as it would have (a draft model
  // rebuilding its context for a restored sequence). `on_start` is given
  // that sequence's state before the pass (for the tap to follow it).
  void replay_for_tap(std::span<const int32_t> ids, const std::function<void(const SequenceState&)>& on_start);
  ThreadPool& pool() { return pool_; }
  const ThreadPool& pool() const { return pool_; }
  StreamingWeights* streaming() { return streaming_.get(); }
  // Drafts per weight pass the plan holds rollback copies for: the request's
  // (stream.state_snapshots), or fewer when the default was lowered to fit
  // (RunRequest::snapshots_optional).
  size_t max_drafts() const { return max_drafts_; }

  // A new sequence on this model (engine/session.h); its weight passes are
  // accounted in counters().
  Session session(GenerationOptions options);

  // Several fed sessions decoded together, one weight pass per step for all
  // of them (BatchGeneration: each sequence's ids and logits as when
  // generated alone). Returns the weight passes run.
  int64_t decode_together(const std::vector<Session*>& sessions, int64_t max_new,
                          const std::function<void(size_t, int32_t)>& on_token,
                          const std::function<void(size_t, GenerationEnd)>& on_end,
                          const std::function<bool()>& interrupted = nullptr);

  // What a server may ask of one step_rows pass while it runs.
  struct PassControl {
    // Polled between the pass's layers and a long pass's sub-batches: true
    // stops the pass within about a layer, every session in it put back as
    // before the pass (its pending ids still pending; one more KDA state
    // per session is held while the pass runs), and step_rows throws
    // Error(kInterrupted). nullptr: the pass runs to the end.
    std::function<bool()> stop;
    // After each layer step: `done` of the pass's `total` steps (a step is
    // a layer, or a sub-batch of a layer of a layer-major pass: total is
    // layers x sub-batches).
    std::function<void(int64_t done, int64_t total)> progress;
  };

  // One weight pass over the pending ids followed by `ids[k]` of each
  // session k (a prompt chunk, or nothing for a decode row holding one
  // pending id; each session must have some row): a server's new prompts
  // share the pass with its running sequences, which may change between
  // passes. Up to max_batch() rows run as one batch; more, up to
  // tokens_per_read(), run layer-major: each layer's weights are read once
  // for a long prompt's chunk and the decode rows riding with it. Each
  // session's current row becomes the logits of its last id, bit-identical
  // to evaluating it alone; the pass is accounted (pass_done) with all its
  // rows. Not for sessions that log every row. `keeps`: save points taken
  // inside the pass (state/save_point.h), returned in their order, each
  // bit-identical to the session's mark() had the pass ended there, while
  // the pass reads the weights once (a server keeps a system prompt's
  // state within the pass that runs the whole prompt). Each is a copy of
  // one sequence's state (the KDA state and the MLA rows up to it), held
  // from its layer on: the caller counts it where it keeps it.
  std::vector<SavePoint> step_rows(std::span<Session* const> sessions, std::span<const std::span<const int32_t>> ids,
                                   const PassControl& control = {}, std::span<const SavePointWithin> keeps = {});

  // Marks the end of the prefill: the streaming counters split there.
  void prefill_done();
  // After each generation pass of `rows` rows: attributes the bytes and
  // experts read since the last mark to passes of that size.
  void pass_done(size_t rows);
  ModelCounters counters() const;
  // Publishes the ModelParams::expert_trace file (nothing when none was
  // asked for); requests after it are not recorded. Throws k3::Error(kIo).
  void finish_expert_trace();

 private:
  void load(ModelPlan plan);
  // A lib/generate session with this model's pass accounting.
  std::unique_ptr<GenerationSession> generation_session(GenerationOptions options);

  ModelConfig config_;
  Checkpoint checkpoint_;
  ModelParams params_;
  std::unique_ptr<ResidentWeights> resident_;
  std::unique_ptr<StreamingWeights> streaming_;
  std::unique_ptr<ExpertTraceOracle> oracle_;   // in front of the weights with --expert-lookahead-from
  std::unique_ptr<ExpertTraceRecorder> trace_;  // in front of the weights when recording
  ThreadPool pool_;
  std::unique_ptr<ForwardPass> engine_;
  size_t max_drafts_ = 0;
  ModelCounters counters_;
  StreamStats last_;
  std::shared_ptr<kernels::ComputeBackend> device_;  // the plan's, for RunRequest::gpu_device
  kernels::ComputeBackend* backend_ = nullptr;       // set_compute_backend's
};

}  // namespace k3
