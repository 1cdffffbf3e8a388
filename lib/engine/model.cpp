#include "engine/model.h"

#include <algorithm>
#include <chrono>
#include <ostream>

#include "engine/session.h"
#include "model/tensor_manifest.h"

namespace k3 {

Model::Model(ModelConfig config, Checkpoint checkpoint, ModelParams params)
    : config_(std::move(config)), checkpoint_(std::move(checkpoint)), params_(std::move(params)),
      pool_(params_.threads) {
  const auto load_start = std::chrono::steady_clock::now();
  StreamingRequest& req = params_.stream;
  req.compute_threads = params_.threads;
  uint64_t max_batch = params_.batch;
  if (req.active()) {
    req.context = params_.context;
    req.batch = params_.batch;
    validate_checkpoint(config_, checkpoint_);
    // The plan text goes to `log` (or nowhere) before a refusal is thrown.
    std::ostream null_log(nullptr);
    PreparedStream prepared = prepare_streaming(config_, checkpoint_, req, params_.log ? *params_.log : null_log);
    counters_.forecast_peak_rss = prepared.plan.peak_rss;
    counters_.preset = prepared.preset;
    counters_.trunk_budget = prepared.plan_request.trunk_budget;
    counters_.cache_budget = prepared.plan_request.cache_budget;
    max_batch = prepared.plan.batch;
    max_drafts_ = prepared.plan_request.state_snapshots;
    streaming_ = std::make_unique<StreamingWeights>(config_, checkpoint_, req.trunk_dir, std::move(prepared.layout),
                                                    prepared.plan, req.io_threads, params_.progress);
  } else {
    resident_ = std::make_unique<ResidentWeights>(config_, checkpoint_, params_.log);
    max_drafts_ = req.state_snapshots;
  }
  WeightSource& weights = streaming_ ? static_cast<WeightSource&>(*streaming_) : *resident_;
  engine_ = std::make_unique<Engine>(config_, weights, pool_);
  if (streaming_) engine_->set_max_batch(max_batch);  // the plan's prefill batch (lowered when memory is short)
  counters_.streaming = streaming_ != nullptr;
  counters_.max_batch = static_cast<uint64_t>(engine_->max_batch());
  counters_.max_drafts = max_drafts_;
  if (streaming_) {
    counters_.direct_io = streaming_->direct_io();
    last_ = counters_.at_start = counters_.after_prefill = streaming_->stats();
  }
  counters_.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
}

std::unique_ptr<Model> Model::open(const std::string& model_dir, ModelParams params) {
  ModelConfig config = load_model_config(model_dir);
  Checkpoint checkpoint = Checkpoint::open(model_dir);
  return std::make_unique<Model>(std::move(config), std::move(checkpoint), std::move(params));
}

Model::~Model() = default;

Session Model::session(GenerationOptions options) { return Session(*this, generation_session(std::move(options))); }

std::unique_ptr<GenerationSession> Model::generation_session(GenerationOptions options) {
  auto s = std::make_unique<GenerationSession>(*engine_, std::move(options));
  s->set_pass_observer([this](size_t rows) { pass_done(rows); });
  return s;
}

int64_t Model::decode_together(const std::vector<GenerationSession*>& sessions, int64_t max_new,
                               const std::function<void(size_t, int32_t)>& on_token,
                               const std::function<void(size_t, GenerationEnd)>& on_end,
                               const std::function<bool()>& interrupted) {
  BatchGeneration batch(*engine_, sessions);
  batch.generate(max_new, on_token, on_end, interrupted, [this](size_t rows) { pass_done(rows); });
  return batch.weight_passes();
}

void Model::prefill_done() {
  if (streaming_) last_ = counters_.after_prefill = streaming_->stats();
}

void Model::pass_done(size_t rows) {
  if (!streaming_) return;
  const StreamStats now = streaming_->stats();
  std::vector<PassAccount>& by_rows = counters_.passes_by_rows;
  if (by_rows.size() <= rows) by_rows.resize(rows + 1);
  PassAccount& p = by_rows[rows];
  ++p.passes;
  p.trunk_bytes += now.trunk_bytes - last_.trunk_bytes;
  p.expert_bytes += now.expert_bytes - last_.expert_bytes;
  p.experts += now.experts_requested - last_.experts_requested;
  last_ = now;
}

ModelCounters Model::counters() const {
  ModelCounters c = counters_;
  if (streaming_) c.now = streaming_->stats();
  return c;
}

}  // namespace k3
