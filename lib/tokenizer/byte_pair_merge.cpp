#include "tokenizer/byte_pair_merge.h"

#include <algorithm>
#include <queue>

namespace k3 {

namespace {

constexpr uint32_t kNone = Vocabulary::kNoToken;  // "not a token": sorts after every rank
constexpr size_t kScanLimit = 128;                // bytes; above this the heap wins

}  // namespace

void byte_pair_merge_scan(const Vocabulary& vocab, const uint8_t* p, size_t n, std::vector<TokenId>& out) {
  // parts[i] = (start byte of part i, rank of part i joined with part i+1).
  struct Part {
    uint32_t start;
    uint32_t rank;
  };
  Part stack_parts[kScanLimit + 2];
  std::vector<Part> heap_parts;
  Part* parts = stack_parts;
  if (n + 2 > kScanLimit + 2) {
    heap_parts.resize(n + 2);
    parts = heap_parts.data();
  }
  size_t count = n + 1;  // n parts + the end sentinel
  auto pair_rank = [&](size_t i) -> uint32_t {
    // Rank of parts i and i+1 joined, if part i+1 exists.
    if (i + 2 >= count) return kNone;
    return vocab.rank(p + parts[i].start, parts[i + 2].start - parts[i].start);
  };
  for (size_t i = 0; i < count; ++i) parts[i] = Part{static_cast<uint32_t>(i), kNone};
  for (size_t i = 0; i + 2 < count; ++i) parts[i].rank = pair_rank(i);
  while (count > 2) {
    uint32_t best = kNone;
    size_t at = 0;
    for (size_t i = 0; i + 2 < count; ++i)
      if (parts[i].rank < best) {
        best = parts[i].rank;
        at = i;
      }
    if (best == kNone) break;
    // Merge part at+1 into part at.
    for (size_t k = at + 1; k + 1 < count; ++k) parts[k] = parts[k + 1];  // tiny: a loop beats memmove
    --count;
    parts[at].rank = pair_rank(at);
    if (at > 0) parts[at - 1].rank = pair_rank(at - 1);
  }
  for (size_t i = 0; i + 1 < count; ++i)
    out.push_back(vocab.rank(p + parts[i].start, parts[i + 1].start - parts[i].start));
}

void byte_pair_merge_heap(const Vocabulary& vocab, const uint8_t* p, size_t n, std::vector<TokenId>& out) {
  // Parts as a doubly linked list over byte positions; a part starting at i
  // ends where next[i] starts. Heap entries (rank, left start) are checked
  // against the current list when popped (stale ones are skipped), so the
  // pair popped is always the lowest rank, leftmost on ties: the same pair
  // the scan would pick.
  std::vector<uint32_t> next(n + 1), prev(n + 1);
  for (size_t i = 0; i <= n; ++i) {
    next[i] = static_cast<uint32_t>(i + 1);
    prev[i] = static_cast<uint32_t>(i == 0 ? 0 : i - 1);
  }
  std::vector<uint32_t> pair_rank(n + 1, kNone);  // current rank of (part at i, its successor)
  struct Entry {
    uint32_t rank, left;
    bool operator>(const Entry& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  auto update = [&](uint32_t i) {
    // Recompute the pair starting at part i.
    uint32_t j = next[i];
    if (j >= n) {
      pair_rank[i] = kNone;
      return;
    }
    uint32_t r = vocab.rank(p + i, next[j] - i);
    pair_rank[i] = r;
    if (r != kNone) heap.push(Entry{r, i});
  };
  for (uint32_t i = 0; i < n; ++i) update(i);
  std::vector<bool> alive(n + 1, true);
  while (!heap.empty()) {
    Entry e = heap.top();
    heap.pop();
    if (!alive[e.left] || pair_rank[e.left] != e.rank) continue;  // stale
    uint32_t j = next[e.left];
    alive[j] = false;
    next[e.left] = next[j];
    if (next[j] <= n) prev[next[j]] = e.left;
    update(e.left);
    if (e.left > 0) update(prev[e.left]);
  }
  for (uint32_t i = 0; i < n; i = next[i]) out.push_back(vocab.rank(p + i, next[i] - i));
}

void byte_pair_merge(const Vocabulary& vocab, const uint8_t* p, size_t n, std::vector<TokenId>& out) {
  if (n == 0) return;
  if (n == 1) {
    out.push_back(vocab.rank(p, 1));
    return;
  }
  if (n <= kScanLimit) byte_pair_merge_scan(vocab, p, n, out);
  else byte_pair_merge_heap(vocab, p, n, out);
}

}  // namespace k3
