// Which cached expert the routed-expert cache gives up when it needs a slot.
//
// ExpertCache (through ExpertSlots) tells its policy what happens to each
// slot: an expert was put into it (insert), delivered to the model again
// (touch), or dropped (erase). When no slot is free, the policy picks the
// victim among the slots the cache says may be evicted (never one a layer is
// using). A policy only orders slots: the bytes the model receives are the
// checkpoint's whatever it picks, so the output never depends on it; only
// how many bytes are read does. The replay bench (k3-bench-expert-cache)
// drives the same objects over a recorded routing trace, without I/O.
//
// Why more than LRU: a K3 token asks for 16 experts at each of 92 MoE layers
// (1,472 experts, 25.8 GB), and each layer reuses about a third of its
// experts at the next position. A global LRU smaller than a whole token
// evicts every expert before its layer comes round again, so it hits almost
// nothing; giving each layer its own share of the slots keeps each layer's
// recent experts until the next token (docs/expert-cache.md has the table).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/config.h"

namespace k3 {

enum class ExpertCachePolicyKind {
  kLru,       // one least-recently-used order over every slot
  kLayer,     // slots split evenly across the MoE layers, least recently used within a layer
  kLayerLfu,  // the same split, least frequently used (with aging) within a layer
  kLfu,       // least frequently used over every slot, counts halving every few tokens
};

// What a policy knows of the model: keys are layer * num_experts + expert,
// with layer the checkpoint's layer index.
struct ExpertCacheShape {
  int first_layer = 0;  // the first MoE layer (config first_k_dense_replace)
  int layers = 0;       // MoE layers
  int num_experts = 0;
  int experts_per_token = 0;  // routed experts per position and layer
  static ExpertCacheShape of(const ModelConfig& config);
};

class ExpertCachePolicy {
 public:
  virtual ~ExpertCachePolicy() = default;
  // `slot` now holds `key` (a read into it was issued, or it was filled at start).
  virtual void insert(int slot, int64_t key) = 0;
  // The expert in `slot` was delivered to the model.
  virtual void touch(int slot) = 0;
  // `slot` no longer holds an expert (evicted, or its read failed).
  virtual void erase(int slot) = 0;
  // The slot to empty for `incoming`: one for which evictable(slot) is true,
  // -1 only when there is none (a policy orders slots, it never refuses).
  virtual int victim(int64_t incoming, const std::function<bool(int)>& evictable) = 0;
};

// The policy run when none is named (--expert-cache-policy).
inline constexpr ExpertCachePolicyKind kDefaultExpertCachePolicy = ExpertCachePolicyKind::kLayerLfu;

std::unique_ptr<ExpertCachePolicy> make_expert_cache_policy(ExpertCachePolicyKind kind, const ExpertCacheShape& shape,
                                                            uint64_t slots);

// "lru", "layer", "layer-lfu", "lfu": every kind, in that order.
const std::vector<ExpertCachePolicyKind>& expert_cache_policy_kinds();
const char* expert_cache_policy_name(ExpertCachePolicyKind kind);
// Throws k3::Error(kUsage) naming `what` (the flag) and the valid names.
ExpertCachePolicyKind parse_expert_cache_policy(const std::string& name, const std::string& what);

}  // namespace k3
