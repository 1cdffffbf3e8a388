// ExpertCache's cross-layer reads (--expert-lookahead): the experts the next
// layers are guessed to use are read while the current layer computes, into
// slots the current layer does not need, and every guess is scored against
// the routing that follows. Kept apart from the cache's own reads and
// eviction (expert_cache.cpp): a guess only adds background reads.
#include <algorithm>
#include <mutex>

#include "expert_cache/expert_cache.h"

namespace k3 {

int ExpertCache::slot_of(int64_t key) {
  if (const int slot = slots_.find(key); slot >= 0) return slot;
  std::lock_guard<std::mutex> lk(arrivals_mu_);
  auto p = pending_.find(key);
  return p == pending_.end() ? -1 : p->second;
}

void ExpertCache::flush_guesses() {
  for (const HeldRead& h : held_)
    guess_reads_[key(h.layer, h.expert)] = issue_read(h.layer, h.expert, h.slot, /*urgent=*/false);
  held_.clear();
}

void ExpertCache::resolve_guesses(int layer, const std::vector<int64_t>& keys) {
  auto wanted = [&](int64_t k) { return std::find(keys.begin(), keys.end(), k) != keys.end(); };
  uint64_t cancelled = 0, cancelled_bytes = 0;
  // A read of a wrong guess leaves the queue unread: all of it when none of
  // it had started (its slot goes back to the free list now), else the
  // pieces not started yet (a real K3 expert is 4-5 pieces).
  auto free_slot = [&](int64_t k) {
    int slot;
    {
      std::lock_guard<std::mutex> lk(arrivals_mu_);
      auto p = pending_.find(k);
      slot = p->second;
      pending_.erase(p);
    }
    slots_.drop(slot);
    ++cancelled;
  };
  // Held back (a layer that never ran its for_each): never handed to the engine.
  held_.erase(std::remove_if(held_.begin(), held_.end(),
                             [&](const HeldRead& h) {
                               const int64_t k = key(h.layer, h.expert);
                               if (h.layer > layer || wanted(k)) return false;
                               free_slot(k);
                               cancelled_bytes += index_.read_bytes(h.layer, h.expert);
                               return true;
                             }),
              held_.end());
  for (auto it = guess_reads_.begin(); it != guess_reads_.end();) {
    const int64_t k = it->first;
    const uint64_t id = it->second;
    if (layer_of(k) > layer) {  // a later layer's guess: not decided yet
      ++it;
      continue;
    }
    it = guess_reads_.erase(it);
    if (wanted(k)) {
      io_.promote(id);  // this layer waits for it now
    } else if (const ReadEngine::Cancelled c = io_.cancel(id); c.bytes > 0) {
      cancelled_bytes += c.bytes;
      {
        std::lock_guard<std::mutex> lk(stats_mu_);
        stats_.expert_bytes -= c.bytes;  // counted as read when it was issued
      }
      // A cut read (some of its pieces had started) keeps its slot until
      // they land: its arrival then carries kCancelled and frees the slot.
      if (c.started) ++cancelled;
      else free_slot(k);
    }
  }
  std::lock_guard<std::mutex> lk(stats_mu_);
  stats_.guess.cancelled_reads += cancelled;
  stats_.guess.cancelled_bytes += cancelled_bytes;
}

void ExpertCache::settle() {
  flush_guesses();
  for (;;) {
    Arrival a;
    {
      std::unique_lock<std::mutex> lk(arrivals_mu_);
      if (pending_.empty()) return;
      arrivals_cv_.wait(lk, [&] { return !arrivals_.empty(); });
      a = std::move(arrivals_.front());
      arrivals_.pop_front();
      pending_.erase(a.key);
    }
    keep_stray(a);
  }
}

void ExpertCache::score_guess(int layer, const std::vector<int64_t>& keys) {
  const std::vector<int64_t>* guessed = nullptr;
  for (const Guess& g : guesses_)
    if (g.layer == layer) guessed = &g.keys;
  uint64_t right = 0, reads_used = 0;
  for (int64_t k : keys) {
    if (guessed && std::find(guessed->begin(), guessed->end(), k) != guessed->end()) ++right;
    // A guessed read this layer now asks for was worth its bytes, whichever
    // guess (this token's or an earlier one's) brought it in.
    const int slot = slot_of(k);
    if (slot >= 0 && slots_.claim_guess(slot)) ++reads_used;
  }
  // Scored, or stale: a guess for a layer at or before this one (a pass
  // that ended early) is never scored later.
  guesses_.erase(std::remove_if(guesses_.begin(), guesses_.end(), [&](const Guess& g) { return g.layer <= layer; }),
                 guesses_.end());
  std::lock_guard<std::mutex> lk(stats_mu_);
  stats_.guess.used += right;
  stats_.guess.reads_used += reads_used;
}

void ExpertCache::prefetch_guess(int layer, const std::vector<int>& experts) {
  if (slots_.size() == 0 || experts.empty()) return;
  guessing_ = true;
  Guess* g = nullptr;
  for (Guess& x : guesses_)
    if (x.layer == layer) g = &x;
  const bool new_layer = g == nullptr;
  if (new_layer) {
    guesses_.push_back(Guess{layer, {}});
    g = &guesses_.back();
  }
  std::vector<int64_t> added;
  for (int e : experts) {
    const int64_t k = key(layer, e);
    if (std::find(g->keys.begin(), g->keys.end(), k) == g->keys.end()) added.push_back(k);
  }
  g->keys.insert(g->keys.end(), added.begin(), added.end());
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    if (new_layer) ++stats_.guess.layers;
    stats_.guess.experts += added.size();
  }
  // The layer computing now comes first: a guess never takes one of its
  // slots, so while one of its experts still lacks a slot (prefetch found
  // none to evict) the guess finds none either. Nor does a guess evict
  // another guess not yet scored (the nearer layer's was made first).
  // Between two layers' expert phases (a dense layer guessing the first MoE
  // layer of a pass) no layer holds slots: any layer may be guessed, and the
  // reads start at once; but a cache of one layer's top-k (the floor) keeps
  // every slot for the layers' own experts.
  const bool between = phase_layer_ < 0;
  if (between && slots_.size() <= static_cast<uint64_t>(config_.num_experts_per_token)) return;
  if (!between && layer <= current_layer_) return;
  std::vector<int64_t> keep;
  if (!between) keep = current_keys_;
  for (const Guess& x : guesses_) keep.insert(keep.end(), x.keys.begin(), x.keys.end());
  // Held back until the current layer's reads have landed (flush_guesses);
  // pending_ already lists them, so nothing reads them twice meanwhile.
  uint64_t reads = 0, bytes = 0;
  for (int e : experts) {
    const int64_t k = key(layer, e);
    if (slot_of(k) >= 0) continue;  // resident or in flight already
    const int slot = take_slot(k, &keep);
    if (slot < 0) break;
    held_.push_back(HeldRead{layer, e, slot});
    {
      std::lock_guard<std::mutex> lk(arrivals_mu_);
      pending_[k] = slot;
    }
    ++reads;
    bytes += index_.read_bytes(layer, e);
  }
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    stats_.guess.reads += reads;
    stats_.guess.read_bytes += bytes;
  }
  if (between) flush_guesses();
}

}  // namespace k3
