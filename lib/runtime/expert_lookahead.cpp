// ExpertCache's cross-layer reads (--expert-lookahead): the experts the next
// layer is guessed to use are read while the current layer computes, into
// slots the current layer does not need, and every guess is scored against
// the routing that follows. Kept apart from the cache's own reads and
// eviction (expert_cache.cpp): a guess only adds background reads.
#include <algorithm>
#include <mutex>

#include "runtime/expert_cache.h"

namespace k3 {

int ExpertCache::slot_of(int64_t key) {
  if (const int slot = slots_.find(key); slot >= 0) return slot;
  std::lock_guard<std::mutex> lk(arrivals_mu_);
  auto p = pending_.find(key);
  return p == pending_.end() ? -1 : p->second;
}

void ExpertCache::settle() {
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
  uint64_t right = 0, reads_used = 0;
  for (int64_t key : keys) {
    if (layer == guess_layer_ && std::find(guess_keys_.begin(), guess_keys_.end(), key) != guess_keys_.end()) ++right;
    // A guessed read this layer now asks for was worth its bytes, whichever
    // guess (this token's or an earlier one's) brought it in.
    const int slot = slot_of(key);
    if (slot >= 0 && guessed_[slot]) {
      guessed_[slot] = 0;
      ++reads_used;
    }
  }
  if (layer == guess_layer_) guess_layer_ = -1;
  std::lock_guard<std::mutex> lk(stats_mu_);
  stats_.guess.used += right;
  stats_.guess.reads_used += reads_used;
}

void ExpertCache::prefetch_guess(int layer, const std::vector<int>& experts) {
  if (slots_.size() == 0 || experts.empty()) return;
  guessing_ = true;
  const int64_t E = config_.num_experts;
  guess_layer_ = layer;
  guess_keys_.clear();
  for (int e : experts) guess_keys_.push_back(layer * E + e);
  {
    std::lock_guard<std::mutex> lk(stats_mu_);
    ++stats_.guess.layers;
    stats_.guess.experts += experts.size();
  }
  // The layer computing now comes first: a guess never takes one of its
  // slots, so while one of its experts still lacks a slot (prefetch found
  // none to evict) the guess finds none either.
  if (current_layer_ != layer - 1) return;
  std::vector<int64_t> keep = current_keys_;
  keep.insert(keep.end(), guess_keys_.begin(), guess_keys_.end());
  uint64_t reads = 0, bytes = 0;
  for (size_t k = 0; k < experts.size(); ++k) {
    if (slot_of(guess_keys_[k]) >= 0) continue;  // resident or in flight already
    const int slot = take_slot(guess_keys_[k], &keep);
    if (slot < 0) break;
    issue_read(layer, experts[k], slot, /*urgent=*/false);
    guessed_[slot] = 1;
    ++reads;
    bytes += read_bytes_[slot];
  }
  std::lock_guard<std::mutex> lk(stats_mu_);
  stats_.guess.reads += reads;
  stats_.guess.read_bytes += bytes;
}

}  // namespace k3
