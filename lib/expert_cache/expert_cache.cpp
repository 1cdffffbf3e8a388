#include "expert_cache/expert_cache.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include "checkpoint/checkpoint.h"
#include "common/clock.h"
#include "common/error.h"
#include "model/tensor_manifest.h"
#include "model/weight_binding.h"

namespace k3 {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

ExpertCache::ExpertCache(const ModelConfig& config, const Checkpoint& checkpoint,
                         const std::vector<std::unique_ptr<DirectFile>>& shard_files, uint64_t slots, ReadEngine& io,
                         ExpertCachePolicyKind policy)
    : config_(config),
      index_(config, checkpoint),
      shard_files_(shard_files),
      io_(io),
      policy_(policy),
      slots_(slots, make_expert_cache_policy(policy, ExpertCacheShape::of(config), slots)),
      weights_(slots) {
  slot_bytes_ = index_.slot_bytes();
  // Every expert read lands in the arena and is computed from it: on huge
  // pages an O_DIRECT read pins one page instead of ~200 (bench checkpoint:
  // the read threads' CPU time halved; docs/memory.md has the figures).
  if (slots) arena_ = AlignedBuffer(slots * slot_bytes_, AlignedBuffer::HugePages{});
  // A cache that holds every expert is filled at start: the run is then
  // fully resident and no token waits for an expert.
  const int moe_layers = config_.num_hidden_layers - config_.first_k_dense_replace;
  if (moe_layers > 0 && slots == static_cast<uint64_t>(moe_layers) * config_.num_experts) preload();
}

ExpertCache::~ExpertCache() {
  // Reads still in flight (a prefetch whose layer failed) write into the
  // arena: wait for them before it goes. Guessed reads never started have
  // no arrival to wait for.
  std::unique_lock<std::mutex> lk(arrivals_mu_);
  for (const HeldRead& h : held_) pending_.erase(key(h.layer, h.expert));
  while (!pending_.empty()) {
    arrivals_cv_.wait(lk, [&] { return !arrivals_.empty(); });
    pending_.erase(arrivals_.front().key);
    arrivals_.pop_front();
  }
}

void ExpertCache::preload() {
  ReadLatch latch;
  std::vector<ReadEngine::Read> reads;
  std::vector<std::pair<int, int>> order;
  for (int l = config_.first_k_dense_replace; l < config_.num_hidden_layers; ++l)
    for (int e = 0; e < config_.num_experts; ++e) {
      const int slot = take_slot(key(l, e));
      uint8_t* base = slot_base(slot);
      for (const ExpertRead& r : index_.reads(l, e)) {
        reads.push_back(
            ReadEngine::Read{shard_files_[r.shard].get(), r.offset, r.length, r.need, base + r.slot_offset});
        stats_.load_bytes += r.length;
      }
      order.emplace_back(l, slot);
    }
  io_.submit(std::move(reads), latch.callback(), true);
  latch.wait();
  for (const auto& [l, slot] : order) {
    const int e = expert_of(slots_.key(slot));
    const uint8_t* base = slot_base(slot);
    if (config_.experts_mxfp4) check_scales(l, e, base);
    weights_[slot] = bind(l, e, base);
    slots_.make_resident(slot);
    slots_.release(slot);
  }
}

ExpertWeights ExpertCache::bind(int layer, int e, const uint8_t* base) const {
  const std::string prefix = expert_tensor_prefix(config_, layer, e);
  return bind_expert_weights(config_, layer, e, [&](const std::string& name) -> const void* {
    const std::string suffix = name.substr(prefix.size());
    for (size_t k = 0; k < index_.suffixes().size(); ++k)
      if (index_.suffixes()[k] == suffix) return base + index_.tensor_offset(layer, e, k);
    throw Error(ExitCode::kInternal, "unknown expert tensor " + name);
  });
}

bool ExpertCache::resident(int layer, int expert) const { return slots_.find(key(layer, expert)) >= 0; }

ExpertCacheStats ExpertCache::stats() const {
  std::lock_guard<std::mutex> lk(stats_mu_);
  ExpertCacheStats s = stats_;
  // Between passes the gap since the last MoE layer is still open: counted
  // as boundary time so far, so that the difference of two snapshots (a
  // run's decode figures, taken after the prompt's pass) holds only the time
  // between them, not the prompt pass's tail.
  if (phase_layer_ < 0 && last_end_layer_ >= 0) {
    s.phases.boundary_seconds += std::chrono::duration<double>(Clock::now() - last_end_).count();
    s.phases.boundary_busy_seconds += io_.busy_seconds() - last_end_busy_;
  }
  return s;
}

int ExpertCache::take_slot(int64_t key, const std::vector<int64_t>* keep) { return slots_.take(key, keep); }

void ExpertCache::check_scales(int layer, int expert, const uint8_t* base) const {
  for (size_t k = 0; k < index_.suffixes().size(); ++k) {
    if (!index_.is_scale(k)) continue;
    const uint8_t* p = base + index_.tensor_offset(layer, expert, k);
    const uint64_t n = index_.tensor_bytes(k);
    for (uint64_t i = 0; i < n; ++i)
      if (p[i] >= 254)
        throw Error(ExitCode::kBadModel, expert_tensor_prefix(config_, layer, expert) + index_.suffixes()[k] +
                                             ": scale byte " + std::to_string(p[i]) +
                                             " (bytes >= 254 are NaN or overflow FP32)");
  }
}

uint64_t ExpertCache::issue_read(int layer, int expert, int slot, bool urgent) {
  const int64_t k = key(layer, expert);
  if (slots_.guessed(slot)) {  // a guessed read evicted before any layer asked for it
    std::lock_guard<std::mutex> lk(stats_mu_);
    ++stats_.guess.wasted_reads;
    stats_.guess.wasted_bytes += slots_.read_bytes(slot);
  }
  uint8_t* base = slot_base(slot);
  std::vector<ReadEngine::Read> reads;
  uint64_t bytes = 0;
  for (const ExpertRead& r : index_.reads(layer, expert)) {
    reads.push_back(ReadEngine::Read{shard_files_[r.shard].get(), r.offset, r.length, r.need, base + r.slot_offset});
    bytes += r.length;
  }
  slots_.note_read(slot, bytes, !urgent);
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    stats_.expert_bytes += bytes;
  }
  {
    std::lock_guard<std::mutex> lk(arrivals_mu_);
    pending_[k] = slot;
  }
  return io_.submit(
      std::move(reads),
      [this, k, slot](const std::string& err) {
        std::lock_guard<std::mutex> lk(arrivals_mu_);
        arrivals_.push_back(Arrival{k, slot, err});
        arrivals_cv_.notify_all();
      },
      urgent ? ReadEngine::Priority::kUrgent : ReadEngine::Priority::kSpeculative);
}

void ExpertCache::keep_stray(const Arrival& a) {
  const int layer = layer_of(a.key), e = expert_of(a.key);
  const uint8_t* base = slot_base(a.slot);
  bool ok = a.error.empty();
  if (ok && config_.experts_mxfp4) {
    try {
      check_scales(layer, e, base);
    } catch (const Error&) {
      ok = false;
    }
  }
  if (!ok) {
    slots_.drop(a.slot);
    return;
  }
  weights_[a.slot] = bind(layer, e, base);
  slots_.make_resident(a.slot);
  slots_.release(a.slot);
}

void ExpertCache::phase_begin(int layer) {
  const Clock::time_point now = Clock::now();
  const double busy = io_.busy_seconds();
  std::lock_guard<std::mutex> lk(stats_mu_);
  if (last_end_layer_ >= 0) {
    const double gap = std::chrono::duration<double>(now - last_end_).count(), gap_busy = busy - last_end_busy_;
    // A layer at or before the last one: a new pass began in between.
    if (layer > last_end_layer_) {
      stats_.phases.between_seconds += gap;
      stats_.phases.between_busy_seconds += gap_busy;
    } else {
      stats_.phases.boundary_seconds += gap;
      stats_.phases.boundary_busy_seconds += gap_busy;
    }
  }
  phase_layer_ = layer;
  phase_start_ = now;
  phase_start_busy_ = busy;
  prefetched_layer_ = -1;
}

void ExpertCache::phase_continue() {
  std::lock_guard<std::mutex> lk(stats_mu_);
  phase_layer_ = last_end_layer_;
  phase_start_ = last_end_;
  phase_start_busy_ = last_end_busy_;
}

bool ExpertCache::open_phase(int layer) {
  // A chunk asks for a layer's experts in groups, a call each after the
  // layer's one prefetch: the later calls continue the layer's phase.
  const bool later_group = phase_layer_ < 0 && layer == last_end_layer_ && layer == prefetched_layer_;
  if (later_group) phase_continue();
  else if (phase_layer_ != layer) phase_begin(layer);
  return later_group;
}

size_t ExpertCache::resident_at_prefetch(int layer, const std::vector<int>& experts,
                                         const std::vector<size_t>& hits) const {
  // An expert read since the prefetch (for an earlier group's call) is no hit.
  return static_cast<size_t>(std::count_if(hits.begin(), hits.end(), [&](size_t k) {
    return std::binary_search(prefetch_resident_.begin(), prefetch_resident_.end(), key(layer, experts[k]));
  }));
}

void ExpertCache::phase_end(int layer) {
  const Clock::time_point now = Clock::now();
  const double busy = io_.busy_seconds();
  std::lock_guard<std::mutex> lk(stats_mu_);
  stats_.phases.experts_seconds += std::chrono::duration<double>(now - phase_start_).count();
  stats_.phases.experts_busy_seconds += busy - phase_start_busy_;
  phase_layer_ = -1;
  last_end_layer_ = layer;
  last_end_ = now;
  last_end_busy_ = busy;
}

void ExpertCache::prefetch(int layer, const std::vector<int>& experts) {
  phase_begin(layer);
  if (slots_.size() == 0) return;
  std::vector<int64_t>& keys = current_keys_;  // kept for prefetch_guess
  keys.clear();
  for (int e : experts) keys.push_back(key(layer, e));
  prefetched_layer_ = layer;
  prefetch_resident_.clear();
  for (int64_t k : keys)
    if (slots_.find(k) >= 0) prefetch_resident_.push_back(k);
  std::sort(prefetch_resident_.begin(), prefetch_resident_.end());
  if (guessing_) {
    score_guess(layer, keys);
    // Before this layer's misses are issued: a wrong guess not yet started
    // gives its slot and its place in the queue to them.
    resolve_guesses(layer, keys);
  }
  flush_guesses();  // held for a layer that never ran its for_each (a failed step)
  current_layer_ = layer;
  for (size_t k = 0; k < experts.size(); ++k) {
    if (slots_.find(keys[k]) >= 0) continue;
    {
      std::lock_guard<std::mutex> lk(arrivals_mu_);
      if (pending_.count(keys[k])) continue;
    }
    // Never evict an expert this layer is about to use.
    const int slot = take_slot(keys[k], &keys);
    if (slot < 0) return;  // for_each issues the rest as slots free up
    issue_read(layer, experts[k], slot);
  }
}

void ExpertCache::for_each(int layer, const std::vector<int>& experts,
                           const std::function<void(size_t k, const ExpertWeights& w)>& on_ready) {
  const bool later_group = open_phase(layer);
  // Held guesses belong to the layer whose prefetch came last; any other
  // layer's for_each might wait on one of them.
  if (layer != current_layer_) flush_guesses();
  std::vector<size_t> hits;
  std::deque<size_t> misses;
  std::unordered_map<int64_t, size_t> index;  // key -> k of this call
  size_t inflight = 0;                        // reads of this call not yet arrived
  for (size_t k = 0; k < experts.size(); ++k) {
    const int64_t kk = key(layer, experts[k]);
    index[kk] = k;
    if (const int slot = slots_.find(kk); slot >= 0) {
      slots_.pin(slot);
      hits.push_back(k);
      continue;
    }
    bool pending;
    {
      std::lock_guard<std::mutex> lk(arrivals_mu_);
      pending = pending_.count(kk) > 0;
    }
    if (pending) ++inflight;  // prefetch started it
    else misses.push_back(k);
  }
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    stats_.experts_requested += experts.size();
    stats_.experts_resident += later_group ? resident_at_prefetch(layer, experts, hits) : hits.size();
  }
  std::string io_error;
  std::exception_ptr failure;
  auto issue = [&] {
    while (!misses.empty() && !failure && io_error.empty()) {
      const int slot = take_slot(key(layer, experts[misses.front()]));
      if (slot < 0) return;
      const size_t k = misses.front();
      misses.pop_front();
      issue_read(layer, experts[k], slot);
      ++inflight;
    }
  };
  auto deliver = [&](size_t k, int slot) {
    if (!failure) {
      try {
        on_ready(k, weights_[slot]);
      } catch (...) {
        failure = std::current_exception();
      }
    }
    slots_.release(slot);
  };
  // Misses go to the disk first; resident experts compute while they load.
  // The guesses made for later layers wait for this layer's reads to land,
  // so they never share the disk with a read this layer waits for.
  issue();
  if (inflight == 0 && misses.empty()) flush_guesses();
  for (size_t k : hits) {
    deliver(k, slots_.find(key(layer, experts[k])));
    issue();
  }
  while (inflight > 0 || (!misses.empty() && !failure && io_error.empty())) {
    if (inflight == 0) {
      issue();
      if (inflight == 0) throw Error(ExitCode::kInternal, "expert cache has no slot to load into");
    }
    Arrival a;
    {
      std::unique_lock<std::mutex> lk(arrivals_mu_);
      if (arrivals_.empty()) {
        const auto t0 = Clock::now();
        arrivals_cv_.wait(lk, [&] { return !arrivals_.empty(); });
        std::lock_guard<std::mutex> slk(stats_mu_);
        stats_.io_wait_seconds += seconds_since(t0);
      }
      a = std::move(arrivals_.front());
      arrivals_.pop_front();
      pending_.erase(a.key);
    }
    auto idx = index.find(a.key);
    if (idx == index.end()) {  // a prefetch this call did not ask for
      keep_stray(a);
      continue;
    }
    --inflight;
    if (a.error == ReadEngine::kCancelled && !failure && io_error.empty()) {
      // A guessed read cut when an earlier visit of this layer did not use
      // it (a pass that ended early): this call wants it, so read it again.
      slots_.drop(a.slot);
      misses.push_back(idx->second);
      issue();
      continue;
    }
    if (!a.error.empty() || failure || !io_error.empty()) {
      if (!a.error.empty() && io_error.empty()) io_error = a.error;
      slots_.drop(a.slot);
      continue;
    }
    const int e = experts[idx->second];
    const uint8_t* base = slot_base(a.slot);
    try {
      if (config_.experts_mxfp4) check_scales(layer, e, base);
    } catch (...) {
      failure = std::current_exception();
      slots_.drop(a.slot);
      continue;
    }
    weights_[a.slot] = bind(layer, e, base);
    slots_.make_resident(a.slot);
    if (inflight == 0 && misses.empty()) flush_guesses();  // the last read landed: the disk is the guesses'
    deliver(idx->second, a.slot);
    issue();
  }
  flush_guesses();
  phase_end(layer);
  if (failure) std::rethrow_exception(failure);
  if (!io_error.empty()) throw Error(ExitCode::kIo, io_error);
}

}  // namespace k3
