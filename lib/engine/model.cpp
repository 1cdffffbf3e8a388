#include "engine/model.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ostream>

#include "common/clock.h"
#include "common/command_keys.h"
#include "common/error.h"
#include "common/setting_spelling.h"
#include "common/tool_main.h"
#include "engine/session.h"
#include "generate/batch_generation.h"
#include "generate/generation_session.h"
#include "gpu/gpu.h"
#include "io/spill_file.h"
#include "model/forward_pass.h"
#include "model/tensor_manifest.h"
#include "runtime/device_plan.h"
#include "runtime/resident_plan.h"

namespace k3 {

namespace {

// What decides how many positions a run spans, for check_position_limit
// (after the memory plan, whose refusal of an absurd context says more).
std::string span_what() {
  return spelled(run_setting::kContext) + ", or the prompt, saved state and " + spelled(run_setting::kMaxNew);
}

// The most rows one device product gets: a chunk's (an expert's products
// take every row of the chunk that chose it), or a pass's.
uint64_t device_rows(uint64_t chunk, uint64_t batch) { return std::max(chunk, batch); }

// Whether the device copies its staged weights into device-local memory
// (the plan counts those copies).
bool device_local_staging(const kernels::ComputeBackend* device) {
  return device != nullptr && device->counters().device_local_staging;
}

// The request's device, opened and its fma probed; a refusal names the
// setting and the index ("--gpu 3: there is no such Vulkan device ...").
std::unique_ptr<kernels::ComputeBackend> open_device(const RunRequest& req) {
  try {
    return open_gpu_backend(req.gpu_device, static_cast<uint64_t>(std::llround(req.gpu_mb * 1e6)));
  } catch (const Error& e) {
    throw Error(e.code(), spelled(kGpuSetting) + " " + std::to_string(req.gpu_device) + ": " + e.message());
  }
}

}  // namespace

Model::Model(ModelConfig config, Checkpoint checkpoint, ModelParams params)
    : config_(std::move(config)),
      checkpoint_(std::move(checkpoint)),
      params_(std::move(params)),
      pool_(params_.threads) {
  load(plan(config_, checkpoint_, params_));
}

Model::Model(ModelConfig config, Checkpoint checkpoint, ModelParams params, ModelPlan plan)
    : config_(std::move(config)),
      checkpoint_(std::move(checkpoint)),
      params_(std::move(params)),
      pool_(params_.threads) {
  load(std::move(plan));
}

std::unique_ptr<Model> Model::open(const std::string& model_dir, ModelParams params) {
  ModelConfig config = load_model_config(model_dir);
  Checkpoint checkpoint = Checkpoint::open(model_dir);
  return std::make_unique<Model>(std::move(config), std::move(checkpoint), std::move(params));
}

ModelPlan Model::plan(const ModelConfig& config, const Checkpoint& checkpoint, const ModelParams& params) {
  const uint64_t chunk = prefill_chunk_override();  // a bad value is refused before anything is said or read
  const auto start = std::chrono::steady_clock::now();
  ModelPlan out;
  RunRequest& req = out.request = params.stream;
  req.compute_threads = params.threads;
  check_device_request(req);
  if (req.gpu_device >= 0) out.device = open_device(req);  // before anything is said or read
  if (req.active()) {
    req.context = params.context;
    req.batch = params.batch;
    req.chunk = chunk;
    validate_checkpoint(config, checkpoint);
    // The plan text goes to `log` (or nowhere) before a refusal is thrown.
    std::ostream null_log(nullptr);
    out.stream = prepare_streaming(config, checkpoint, req, params.log ? *params.log : null_log);
    const MemoryPlan& memory = out.stream->plan;
    const uint64_t rows = device_rows(memory.chunk, memory.batch);
    // A mix gets at most a chunk's sub-batch or a batch of rows (ForwardPass).
    const uint64_t mix_rows = std::min(rows, std::max(memory.batch, memory.chunk_sub_batch));
    out.device_plan = check_device_plan(checkpoint, req, rows, device_mix_rows(config, mix_rows, rows), params.context,
                                        device_local_staging(out.device.get()), params.log ? *params.log : null_log);
    check_position_limit(config, req.context, span_what());
  } else {
    // The sequences' state and caches are planned as the budgeted path
    // plans them, before any weight or state is allocated.
    check_resident_run(config, checkpoint, req, params.context, params.batch);
    check_position_limit(config, params.context, span_what());
    std::ostream null_log(nullptr);
    const uint64_t rows = device_rows(chunk, params.batch);
    out.device_plan = check_device_plan(checkpoint, req, rows, device_mix_rows(config, rows, rows), params.context,
                                        device_local_staging(out.device.get()), params.log ? *params.log : null_log);
    // Said only once the checks have passed, so a refusal stays one line.
    if (params.log)
      *params.log << tool_name() << ": no " << spelled(run_setting::kTrunkDir)
                  << " or budget: the whole model (trunk and every routed expert) is loaded resident; use "
                  << spelled(kPackTrunk) << " and " << spelled(run_setting::kTrunkDir) << "/"
                  << spelled(run_setting::kPreset) << " to run in a memory budget\n";
  }
  out.seconds = seconds_since(start);
  return out;
}

void Model::load(ModelPlan plan) {
  const auto load_start = std::chrono::steady_clock::now();
  params_.stream = std::move(plan.request);
  const RunRequest& req = params_.stream;
  device_ = std::move(plan.device);
  counters_.device_plan_bytes = plan.device_plan.bytes;
  uint64_t max_batch = params_.batch;
  uint64_t chunk = prefill_chunk_override();  // resident: nothing is read, chunks only when asked
  uint64_t chunk_sub_batch = 0;
  if (plan.stream) {
    PreparedStream& prepared = *plan.stream;
    counters_.forecast_peak_rss = prepared.plan.peak_rss;
    counters_.cache_lent_bytes = prepared.plan.cache_lent_bytes;
    counters_.hold_bytes = prepared.plan.layer_held ? prepared.plan.hold_bytes : 0;
    counters_.pinned_lent_bytes = prepared.plan.pinned_lent_bytes;
    counters_.preset = prepared.preset;
    counters_.trunk_budget = prepared.plan_request.trunk_budget;
    counters_.cache_budget = prepared.plan_request.cache_budget;
    max_batch = prepared.plan.batch;
    chunk = prepared.plan.chunk;
    chunk_sub_batch = prepared.plan.chunk_sub_batch;
    max_drafts_ = prepared.plan_request.state_snapshots;
    counters_.draft_block_bytes = prepared.plan.draft_streamed ? prepared.plan.block_bytes : 0;
    streaming_ = std::make_unique<StreamingWeights>(config_, checkpoint_, req.trunk_dir, std::move(prepared.layout),
                                                    prepared.plan, req.io_threads, params_.progress, req.cache_policy);
    streaming_->set_expert_lookahead(req.expert_lookahead);
  } else {
    resident_ = std::make_unique<ResidentWeights>(config_, checkpoint_, params_.log);
    max_drafts_ = req.state_snapshots;
  }
  WeightSource* weights = streaming_ ? static_cast<WeightSource*>(streaming_.get()) : resident_.get();
  if (!params_.lookahead_trace.empty() && streaming_) {
    oracle_ = std::make_unique<ExpertTraceOracle>(*weights, params_.lookahead_trace, config_.num_experts);
    weights = oracle_.get();
  }
  if (!params_.expert_trace.empty()) {
    trace_ = std::make_unique<ExpertTraceRecorder>(*weights, params_.expert_trace);
    weights = trace_.get();
  }
  engine_ = std::make_unique<ForwardPass>(config_, *weights, pool_);
  if (streaming_) engine_->set_max_batch(max_batch);  // the plan's prefill batch (lowered when memory is short)
  engine_->set_chunk(chunk);
  engine_->set_chunk_sub_batch(chunk_sub_batch);
  set_compute_backend(device_.get());
  // The chunk's attention keeps each sequence's MLA caches on the device,
  // as many as the device plan counted (check_device_plan), and the
  // chunk's block states and a layer's weights in the plan's shares.
  if (device_) {
    device_->keep_latent_caches(std::max<uint64_t>(1, req.sequences) * mla_latent_shape(checkpoint_).layers,
                                params_.context);
    device_->limit_chunk_blocks(plan.device_plan.chunk_block_bytes);
    device_->limit_layer_weights(plan.device_plan.layer_weight_bytes);
  }
  if (plan.stream && plan.stream->plan.chunk_spilled) engine_->set_spill(std::make_unique<SpillFile>(req.trunk_dir));
  if (plan.stream && plan.stream->plan.state_lent_bytes > 0)
    engine_->set_state_loan(
        std::make_unique<SpillFile>(req.trunk_dir, "k3-state-loan", "the sequence state lent to the prefill's chunk"));
  counters_.streaming = streaming_ != nullptr;
  counters_.max_batch = static_cast<uint64_t>(engine_->max_batch());
  counters_.tokens_per_read = static_cast<uint64_t>(engine_->tokens_per_read());
  counters_.max_drafts = max_drafts_;
  if (streaming_) {
    counters_.direct_io = streaming_->direct_io();
    last_ = counters_.at_start = counters_.after_prefill = streaming_->stats();
    counters_.load_bytes = counters_.at_start.load_bytes;
  } else {
    counters_.load_bytes = resident_->resident_bytes();
  }
  counters_.load_seconds = plan.seconds + seconds_since(load_start);
}

Model::~Model() = default;

size_t Model::max_batch() const { return engine_->max_batch(); }
size_t Model::tokens_per_read() const { return engine_->tokens_per_read(); }
WeightSource& Model::weights() { return engine_->source(); }
void Model::set_layer_tap(LayerTap* tap) { engine_->set_layer_tap(tap); }

Session Model::session(GenerationOptions options) { return Session(*this, generation_session(std::move(options))); }

std::unique_ptr<GenerationSession> Model::generation_session(GenerationOptions options) {
  auto s = std::make_unique<GenerationSession>(*engine_, std::move(options));
  s->set_pass_observer([this](size_t rows) { pass_done(rows); });
  return s;
}

int64_t Model::decode_together(const std::vector<Session*>& sessions, int64_t max_new,
                               const std::function<void(size_t, int32_t)>& on_token,
                               const std::function<void(size_t, GenerationEnd)>& on_end,
                               const std::function<bool()>& interrupted) {
  std::vector<GenerationSession*> gens;
  for (Session* s : sessions) gens.push_back(s->gen_.get());
  BatchGeneration batch(*engine_, gens);
  batch.generate(
      max_new,
      [&](size_t i, int32_t id) {
        sessions[i]->ids_.push_back(id);
        if (on_token) on_token(i, id);
      },
      on_end, interrupted, [this](size_t rows) { pass_done(rows); });
  return batch.weight_passes();
}

std::vector<SavePoint> Model::step_rows(std::span<Session* const> sessions,
                                        std::span<const std::span<const int32_t>> ids, const PassControl& control,
                                        std::span<const SavePointWithin> keeps) {
  std::vector<GenerationSession*> gens;
  size_t rows = 0;
  for (size_t k = 0; k < sessions.size(); ++k) {
    gens.push_back(sessions[k]->gen_.get());
    rows += sessions[k]->pending().size() + ids[k].size();
  }
  size_t prompt_rows = 0;
  for (const std::span<const int32_t> chunk : ids) prompt_rows += chunk.size();
  // A pass of prompt rows is compute: its products go to the device (the
  // decode rows riding in it too, with the same bits); decode alone stays.
  const kernels::ScopedComputeBackend products_on(prompt_rows >= kDevicePassPromptRows ? backend_ : nullptr);
  // The control holds for this pass only.
  struct Controlled {
    ForwardPass& pass;
    const PassControl& control;
    Controlled(ForwardPass& p, const PassControl& c) : pass(p), control(c) {
      if (control.stop) pass.set_stop(control.stop, true);
      if (control.progress) pass.set_progress(control.progress);
    }
    ~Controlled() {
      if (control.stop) pass.set_stop(nullptr, false);
      if (control.progress) pass.set_progress(nullptr);
    }
  };
  std::vector<SavePoint> points;
  try {
    const Controlled controlled(*engine_, control);
    points = BatchGeneration::step_rows(*engine_, gens, ids, keeps);
  } catch (...) {
    pass_done(rows);  // what a stopped or failed pass read is its own
    throw;
  }
  for (size_t k = 0; k < sessions.size(); ++k)
    sessions[k]->ids_.insert(sessions[k]->ids_.end(), ids[k].begin(), ids[k].end());
  pass_done(rows);
  return points;
}

void Model::replay_for_tap(std::span<const int32_t> ids, const std::function<void(const SequenceState&)>& on_start) {
  SequenceState replay;
  engine_->reset(replay);
  on_start(replay);
  engine_->forward(replay, ids, LogitRows::kNone, nullptr);
}

void Model::prefill_done() {
  if (streaming_) last_ = counters_.after_prefill = streaming_->stats();
}

void Model::pass_done(size_t rows) {
  std::vector<PassAccount>& by_rows = counters_.passes_by_rows;
  if (by_rows.size() <= rows) by_rows.resize(rows + 1);
  PassAccount& p = by_rows[rows];
  ++p.passes;
  if (!streaming_) return;
  const StreamStats now = streaming_->stats();
  p.trunk_bytes += now.trunk_bytes - last_.trunk_bytes;
  p.expert_bytes += now.expert_bytes - last_.expert_bytes;
  p.experts += now.experts_requested - last_.experts_requested;
  last_ = now;
}

void Model::set_compute_backend(kernels::ComputeBackend* backend) {
  backend_ = backend;
  engine_->set_compute_backend(backend);
}

ModelCounters Model::counters() const {
  ModelCounters c = counters_;
  if (backend_) {
    c.device = true;
    c.device_counters = backend_->counters();
    c.device_summary = backend_->describe();
  }
  if (streaming_) c.now = streaming_->stats();
  if (const SpillFile* f = engine_ ? engine_->spill() : nullptr) {
    c.spill_written_bytes = f->bytes_written();
    c.spill_read_bytes = f->bytes_read();
  }
  if (const SpillFile* f = engine_ ? engine_->state_loan_file() : nullptr) {
    c.state_loan_written_bytes = f->bytes_written();
    c.state_loan_read_bytes = f->bytes_read();
  }
  return c;
}

void Model::finish_expert_trace() {
  if (trace_) trace_->finish();
}

}  // namespace k3
