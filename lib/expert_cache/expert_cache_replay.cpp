#include "expert_cache/expert_cache_replay.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "common/error.h"
#include "expert_cache/expert_slots.h"

namespace k3 {

ReplayResult replay_expert_cache(const ExpertCallSequence& seq, const ExpertCacheShape& shape, uint64_t slots,
                                 ExpertCachePolicyKind policy) {
  if (slots == 0) throw Error(ExitCode::kUsage, "expert cache replay: the cache needs at least one slot");
  ExpertSlots table(slots, make_expert_cache_policy(policy, shape, slots));
  ReplayResult r;
  r.passes = seq.passes;
  const int64_t E = shape.num_experts;
  std::vector<int64_t> keys;
  for (const ExpertCall& call : seq.calls) {
    keys.clear();
    for (int e : call.experts) keys.push_back(call.layer * E + e);
    r.requests += keys.size();
    // ExpertCache::prefetch: reads start for the misses while slots last.
    std::deque<int> reads;  // slots whose reads were issued, in order
    std::unordered_set<int64_t> issued;
    for (int64_t key : keys) {
      if (table.find(key) >= 0 || issued.count(key)) continue;
      const int slot = table.take(key, &keys);
      if (slot < 0) break;
      reads.push_back(slot);
      issued.insert(key);
    }
    // ExpertCache::for_each: resident experts are pinned and delivered while
    // the remaining misses are issued as slots free up.
    std::vector<int> hits;
    std::deque<int64_t> misses;
    for (int64_t key : keys) {
      if (const int slot = table.find(key); slot >= 0) {
        table.pin(slot);
        hits.push_back(slot);
      } else if (!issued.count(key)) {
        misses.push_back(key);
      }
    }
    r.hits += hits.size();
    auto issue = [&] {
      while (!misses.empty()) {
        const int slot = table.take(misses.front());
        if (slot < 0) return;
        reads.push_back(slot);
        misses.pop_front();
      }
    };
    issue();
    for (int slot : hits) {
      table.release(slot);
      issue();
    }
    while (!reads.empty() || !misses.empty()) {
      if (reads.empty()) {
        issue();
        if (reads.empty()) throw Error(ExitCode::kInternal, "expert cache replay: no slot to load into");
      }
      const int slot = reads.front();
      reads.pop_front();
      table.make_resident(slot);
      table.release(slot);
      issue();
    }
  }
  return r;
}

ReplayResult replay_belady(const ExpertCallSequence& seq, const ExpertCacheShape& shape, uint64_t slots) {
  const int64_t E = shape.num_experts;
  constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
  // Requests flattened; next[i]: the index of the next request of the same expert.
  std::vector<int64_t> flat;
  for (const ExpertCall& call : seq.calls)
    for (int e : call.experts) flat.push_back(call.layer * E + e);
  std::vector<uint64_t> next(flat.size(), kNever);
  std::unordered_map<int64_t, uint64_t> seen;
  for (size_t i = flat.size(); i-- > 0;) {
    auto it = seen.find(flat[i]);
    if (it != seen.end()) next[i] = it->second;
    seen[flat[i]] = i;
  }
  ReplayResult r;
  r.passes = seq.passes;
  std::set<std::pair<uint64_t, int64_t>> cached;   // (next use, key): the last is needed furthest away
  std::unordered_map<int64_t, uint64_t> next_use;  // key -> its entry in `cached`
  size_t i = 0;
  for (const ExpertCall& call : seq.calls) {
    // The call's own experts are in use: out of the choice until it ends.
    std::vector<std::pair<int64_t, uint64_t>> in_call;  // (key, next use after this call's request)
    uint64_t held = 0;                                  // slots the call holds
    for (size_t j = 0; j < call.experts.size(); ++j, ++i) {
      const int64_t key = flat[i];
      r.requests++;
      auto it = next_use.find(key);
      if (it != next_use.end()) {
        r.hits++;
        cached.erase({it->second, key});
        next_use.erase(it);
        in_call.push_back({key, next[i]});
        ++held;
        continue;
      }
      if (cached.size() + held < slots) {
        in_call.push_back({key, next[i]});
        ++held;
      } else if (!cached.empty() && std::prev(cached.end())->first > next[i]) {
        next_use.erase(std::prev(cached.end())->second);
        cached.erase(std::prev(cached.end()));
        in_call.push_back({key, next[i]});
        ++held;
      }  // else: read but not kept (everything cached is needed sooner)
    }
    for (const auto& [key, n] : in_call) {
      cached.insert({n, key});
      next_use[key] = n;
    }
  }
  return r;
}

}  // namespace k3
