#include "runtime/streaming_weights.h"

#include <algorithm>
#include <chrono>

#include "checkpoint/checkpoint.h"
#include "common/clock.h"
#include "common/file.h"

namespace k3 {

StreamingWeights::StreamingWeights(const ModelConfig& config, const Checkpoint& checkpoint,
                                   const std::string& trunk_dir, TrunkLayout layout, const MemoryPlan& plan,
                                   int io_threads, const ProgressCallback& progress, ExpertCachePolicyKind cache_policy)
    : io_(io_threads) {
  const auto t0 = std::chrono::steady_clock::now();
  guessable_.assign(static_cast<size_t>(std::max(0, config.num_hidden_layers)), false);
  // A cache holding every expert has nothing to read ahead: no guess then.
  const uint64_t all_experts =
      static_cast<uint64_t>(std::max(0, config.num_hidden_layers - config.first_k_dense_replace)) * config.num_experts;
  if (plan.cache_slots < all_experts)
    for (int s : plan.pinned) {
      const int layer = layout.sections.at(static_cast<size_t>(s)).layer;
      if (layer >= 0 && layer < config.num_hidden_layers) guessable_[static_cast<size_t>(layer)] = true;
    }
  for (const ShardInfo& s : checkpoint.shards()) shard_files_.push_back(std::make_unique<DirectFile>(s.path));
  if (!trunk_dir.empty()) trunk_file_ = std::make_unique<DirectFile>(path_join(trunk_dir, "trunk.bin"));
  trunk_ = std::make_unique<TrunkStream>(config, checkpoint, trunk_file_.get(), shard_files_, std::move(layout), plan,
                                         io_, progress);
  experts_ = std::make_unique<ExpertCache>(config, checkpoint, shard_files_, plan.cache_slots, io_, cache_policy);
  if (plan.cache_lent_bytes > 0) lend_keep_ = std::max<uint64_t>(plan.chunk_slots, 1);
  hold_layers_ = plan.layer_held;
  lend_pinned_ = plan.pinned_lent_bytes > 0;
  hold_limit_ = plan.hold_limit;
  load_seconds_ = seconds_since(t0);
  // The first streamed units start now, after the start-up reads.
  trunk_->start_read_ahead();
}

StreamingWeights::~StreamingWeights() = default;

bool StreamingWeights::lend_for_chunk() {
  cache_lent_ = lend_keep_ > 0 && experts_->lend(lend_keep_) > 0;
  if (hold_layers_) trunk_->hold_layers(lend_pinned_, hold_limit_);
  return cache_lent_ || hold_layers_;
}

void StreamingWeights::reclaim_after_chunk() {
  if (cache_lent_) experts_->reclaim();
  cache_lent_ = false;
  trunk_->end_hold();
}

bool StreamingWeights::direct_io() const {
  for (const auto& f : shard_files_)
    if (!f->is_direct()) return false;
  return !trunk_file_ || trunk_file_->is_direct();
}

StreamStats StreamingWeights::stats() const {
  const TrunkStreamStats t = trunk_->stats();
  const ExpertCacheStats e = experts_->stats();
  StreamStats s;
  s.trunk_bytes = t.trunk_bytes;
  s.expert_bytes = e.expert_bytes;
  s.load_bytes = t.load_bytes + e.load_bytes;
  s.experts_requested = e.experts_requested;
  s.experts_resident = e.experts_resident;
  s.io_wait_seconds = t.io_wait_seconds + e.io_wait_seconds;
  s.decode_seconds = t.decode_seconds;
  s.io_busy_seconds = io_.busy_seconds();
  s.load_seconds = load_seconds_;
  s.units_not_ahead = t.units_not_ahead;
  s.held_layers = t.held_layers;
  s.held_bytes = t.held_bytes;
  s.repinned_bytes = t.repinned_bytes;
  s.dropped_ahead_bytes = t.dropped_ahead_bytes;
  s.skipped_layers = t.skipped_layers;
  s.cache_lends = e.lends;
  s.cache_reclaims = e.reclaims;
  s.cache_lent_bytes = e.lent_bytes;
  s.cache_lent_slots = experts_->lent_slots();
  s.guess = e.guess;
  s.phases = e.phases;
  return s;
}

void StreamingWeights::embed(const int32_t* ids, size_t n, float* out) { trunk_->embed(ids, n, out); }
const LayerWeights& StreamingWeights::acquire_layer(int layer) { return trunk_->acquire_layer(layer); }
void StreamingWeights::release_layer(int layer) { trunk_->release_layer(layer); }
const HeadWeights& StreamingWeights::acquire_head() { return trunk_->acquire_head(); }
void StreamingWeights::release_head() {}
void StreamingWeights::for_each_head_block(const HeadWeights& head, const HeadBlock& on_block) {
  trunk_->for_each_head_block(head, on_block);
}

void StreamingWeights::prefetch_experts(int layer, const std::vector<int>& experts) {
  experts_->prefetch(layer, experts);
}

void StreamingWeights::for_each_expert(int layer, const std::vector<int>& experts,
                                       const std::function<void(size_t k, const ExpertWeights& w)>& on_ready) {
  experts_->for_each(layer, experts, on_ready);
}

// A pinned section's weights are handed out without a read or a wait
// (TrunkStream::acquire_layer returns them as they are), so the guess costs
// the router's matrix-vector product and nothing else.
const MoeTrunkWeights* StreamingWeights::router_ahead(int layer) {
  // A held chunk lends the pinned sections: no router is in memory for a guess.
  if (!lookahead_ || trunk_->holding() || layer < 0 || static_cast<size_t>(layer) >= guessable_.size() ||
      !guessable_[static_cast<size_t>(layer)])
    return nullptr;
  return &trunk_->acquire_layer(layer).moe;
}

void StreamingWeights::prefetch_guess(int layer, const std::vector<int>& experts) {
  if (lookahead_) experts_->prefetch_guess(layer, experts);
}

}  // namespace k3
