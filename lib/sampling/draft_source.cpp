#include "sampling/draft_source.h"

#include <algorithm>

namespace k3 {

std::vector<int32_t> NgramDrafts::propose(std::span<const int32_t> context, size_t max) {
  const size_t n = context.size();
  if (max == 0 || n < required_ + 1) return {};
  // The longest (then most recent) earlier occurrence of the context's tail.
  size_t best_len = 0, best_end = 0;
  for (size_t end = n - 1; end >= required_; --end) {  // occurrence ends before `end`, continues at context[end]
    size_t len = 0;
    while (len < kMaxMatch && len < end && context[end - 1 - len] == context[n - 1 - len]) ++len;
    if (len > best_len) {
      best_len = len;
      best_end = end;
      if (len == kMaxMatch) break;
    }
  }
  if (best_len < required_) return {};
  const size_t want = std::min(max, 1 + (best_len - required_) + streak_);
  const size_t have = std::min(want, n - best_end);
  return std::vector<int32_t>(context.begin() + static_cast<ptrdiff_t>(best_end),
                              context.begin() + static_cast<ptrdiff_t>(best_end + have));
}

void NgramDrafts::verified(size_t proposed, size_t accepted) {
  if (proposed == 0) return;
  if (accepted == proposed) {
    streak_ = std::min<size_t>(streak_ + 1, kMaxMatch);
    required_ = std::max(min_match_, required_ - 1);
  } else {
    streak_ = 0;
    if (accepted == 0) required_ = std::min(kMaxMatch, required_ + 1);
  }
}

std::vector<int32_t> PredictedDrafts::propose(std::span<const int32_t>, size_t max) {
  if (next_ >= prediction_.size() || max == 0 || (run_ == 0 && misses_ >= 2)) return {};
  const size_t len = std::min({run_ == 0 ? size_t{1} : max, max, prediction_.size() - next_});
  return std::vector<int32_t>(prediction_.begin() + static_cast<ptrdiff_t>(next_),
                              prediction_.begin() + static_cast<ptrdiff_t>(next_ + len));
}

void PredictedDrafts::generated(int32_t id) {
  output_.push_back(id);
  const size_t P = prediction_.size();
  if (next_ < P && prediction_[next_] == id) {
    ++next_;
    ++run_;
    misses_ = 0;
    return;
  }
  run_ = 0;
  ++misses_;
  if (next_ >= P) return;
  // The prediction has an id the output skipped.
  if (next_ + 1 < P && prediction_[next_ + 1] == id) {
    next_ += 2;
    return;
  }
  // The latest output ids (2..8 of them) found again near the old place.
  constexpr size_t kBack = 32, kAhead = 64;
  const size_t lo = next_ > kBack ? next_ - kBack : 0, hi = std::min(P, next_ + kAhead);
  size_t best_len = 1, best_at = 0;
  for (size_t end = lo + 1; end <= hi; ++end) {  // candidate: prediction[..end) ends with the output
    size_t len = 0;
    while (len < 8 && len < end && len < output_.size() &&
           prediction_[end - 1 - len] == output_[output_.size() - 1 - len])
      ++len;
    const bool nearer =
        len == best_len && best_at != 0 &&
        (end > next_ ? end - next_ : next_ - end) < (best_at > next_ ? best_at - next_ : next_ - best_at);
    if (len > best_len || nearer) {
      best_len = len;
      best_at = end;
    }
  }
  if (best_at != 0) {
    next_ = best_at;
    return;
  }
  // Otherwise an id was substituted: expect the one after it. (An id the
  // output inserted is caught by the search above at the next id.)
  ++next_;
}

std::vector<int32_t> ChainedDrafts::propose(std::span<const int32_t> context, size_t max) {
  std::vector<int32_t> d = first_->propose(context, max);
  last_ = first_;
  if (d.empty()) {
    d = second_->propose(context, max);
    last_ = second_;
  }
  return d;
}

void ChainedDrafts::verified(size_t proposed, size_t accepted) {
  if (last_) last_->verified(proposed, accepted);
}

void ChainedDrafts::generated(int32_t id) {
  first_->generated(id);
  second_->generated(id);
}

}  // namespace k3
