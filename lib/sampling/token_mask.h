// Which ids the sampler may choose (structured output, constrain/): one bit
// per id of the vocabulary. The sampler chooses among the set bits only,
// greedy and sampled alike, so a masked id is never produced.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace k3 {

class TokenMask {
 public:
  TokenMask() = default;
  explicit TokenMask(int64_t vocab) { resize(vocab); }

  // `vocab` ids, none allowed.
  void resize(int64_t vocab) {
    size_ = vocab;
    words_.assign(static_cast<size_t>((vocab + 63) / 64), 0);
  }
  void clear() { words_.assign(words_.size(), 0); }
  void allow_all() {
    words_.assign(words_.size(), ~uint64_t{0});
    if (size_ % 64) words_.back() = (uint64_t{1} << (size_ % 64)) - 1;
  }
  void allow(int64_t id) {
    if (id >= 0 && id < size_) words_[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
  }
  void forbid(int64_t id) {
    if (id >= 0 && id < size_) words_[static_cast<size_t>(id) >> 6] &= ~(uint64_t{1} << (id & 63));
  }
  bool allowed(int64_t id) const {
    return id >= 0 && id < size_ && ((words_[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1);
  }
  // this |= other (same size).
  void merge(const TokenMask& other) {
    for (size_t i = 0; i < words_.size() && i < other.words_.size(); ++i) words_[i] |= other.words_[i];
  }
  int64_t count() const {
    int64_t n = 0;
    for (uint64_t w : words_) n += __builtin_popcountll(w);
    return n;
  }
  int64_t size() const { return size_; }

 private:
  int64_t size_ = 0;
  std::vector<uint64_t> words_;
};

}  // namespace k3
