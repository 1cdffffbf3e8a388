#include "expert_cache/expert_cache_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "common/error.h"

namespace k3 {

ExpertCacheShape ExpertCacheShape::of(const ModelConfig& c) {
  ExpertCacheShape s;
  s.first_layer = c.first_k_dense_replace;
  s.layers = std::max(0, c.num_hidden_layers - c.first_k_dense_replace);
  s.num_experts = c.num_experts;
  s.experts_per_token = c.num_experts_per_token;
  return s;
}

namespace {

constexpr double kAbsent = -std::numeric_limits<double>::infinity();
// Counts halve every this many tokens' worth of deliveries: a run of a few
// tokens still remembers which experts a layer keeps coming back to, and an
// old topic fades within a sentence or two.
constexpr double kHalfLifeTokens = 4;

// Use counts per key that halve every `half_life` deliveries, kept in log
// form so that scores taken at different times compare without rescaling:
// rank = log2(count at its last use) + (time of that use) / half_life.
class AgedCounts {
 public:
  explicit AgedCounts(const ExpertCacheShape& s)
      : rank_(static_cast<size_t>(s.first_layer + s.layers) * s.num_experts, kAbsent),
        half_life_(std::max(1.0, kHalfLifeTokens * s.layers * s.experts_per_token)) {}
  double use(int64_t key) {
    const double now = static_cast<double>(++clock_) / half_life_;
    double& r = rank_[static_cast<size_t>(key)];
    const double decayed = r == kAbsent ? 0 : std::exp2(r - now);
    r = std::log2(decayed + 1) + now;
    return r;
  }
  double rank(int64_t key) const { return rank_[static_cast<size_t>(key)]; }

 private:
  std::vector<double> rank_;
  double half_life_;
  uint64_t clock_ = 0;
};

using Order = std::set<std::pair<double, int>>;  // (rank, slot): the first is evicted first

// One order over every slot, by last delivery (kLru) or aged use count (kLfu).
class GlobalPolicy : public ExpertCachePolicy {
 public:
  GlobalPolicy(const ExpertCacheShape& shape, uint64_t slots, bool frequency)
      : rank_(slots, kAbsent), key_(slots, -1), frequency_(frequency), counts_(shape) {}
  void insert(int slot, int64_t key) override {
    key_[slot] = key;
    set_rank(slot, frequency_ ? counts_.rank(key) : static_cast<double>(++clock_));
  }
  void touch(int slot) override {
    set_rank(slot, frequency_ ? counts_.use(key_[slot]) : static_cast<double>(++clock_));
  }
  void erase(int slot) override {
    order_.erase({rank_[slot], slot});
    rank_[slot] = kAbsent;
    key_[slot] = -1;
  }
  int victim(int64_t, const std::function<bool(int)>& evictable) override {
    for (const auto& [rank, slot] : order_)
      if (evictable(slot)) return slot;
    return -1;
  }

 private:
  void set_rank(int slot, double rank) {
    if (key_[slot] < 0) return;
    order_.erase({rank_[slot], slot});
    rank_[slot] = rank;
    order_.insert({rank, slot});
  }
  std::vector<double> rank_;
  std::vector<int64_t> key_;
  bool frequency_;
  AgedCounts counts_;
  Order order_;
  uint64_t clock_ = 0;
};

// Slots split evenly across the MoE layers. A layer at its share replaces
// its own least valuable expert of an earlier visit (its experts of this
// visit are due again soonest: an engine that runs positions one by one
// through a layer asks for them in the next call); a layer below its share,
// or with nothing of an earlier visit left, takes back a slot from the layer
// furthest over its share; when every layer is within its share, the slot
// delivered most recently in another layer goes: the model visits layers in
// order, so that layer is the one whose turn comes again last. A visit is a
// run of consecutive events (inserts, deliveries) of one layer.
class LayerPolicy : public ExpertCachePolicy {
 public:
  LayerPolicy(const ExpertCacheShape& shape, uint64_t slots, bool frequency)
      : shape_(shape), frequency_(frequency), counts_(shape), slot_(slots), layer_(std::max(1, shape.layers)) {
    const uint64_t n = layer_.size();
    for (uint64_t l = 0; l < n; ++l) layer_[l].share = slots / n + (l < slots % n ? 1 : 0);
  }
  void insert(int slot, int64_t key) override {
    Slot& s = slot_[slot];
    s.key = key;
    s.layer = layer_of(key);
    visit(s.layer);
    ++layer_[s.layer].count;
    s.rank = frequency_ ? counts_.rank(key) : static_cast<double>(++clock_);
    s.last = static_cast<double>(++clock_);
    layer_[s.layer].order.insert({s.rank, slot});
    recency_.insert({s.last, slot});
  }
  void touch(int slot) override {
    Slot& s = slot_[slot];
    if (s.key < 0) return;
    unlink(slot);
    visit(s.layer);
    s.last = static_cast<double>(++clock_);
    s.rank = frequency_ ? counts_.use(s.key) : s.last;
    layer_[s.layer].order.insert({s.rank, slot});
    recency_.insert({s.last, slot});
  }
  void erase(int slot) override {
    Slot& s = slot_[slot];
    if (s.key < 0) return;
    unlink(slot);
    --layer_[s.layer].count;
    s = Slot{};
  }
  int victim(int64_t incoming, const std::function<bool(int)>& evictable) override {
    const size_t mine = layer_of(incoming);
    // Experts delivered since this visit began stay for the next call.
    const double visit_start = mine == visiting_ ? layer_[mine].visit_start : std::numeric_limits<double>::infinity();
    if (layer_[mine].count >= layer_[mine].share)
      for (const auto& [rank, slot] : layer_[mine].order)
        if (slot_[slot].last < visit_start && evictable(slot)) return slot;
    // The layer furthest over its share that can give a slot back.
    for (;;) {
      size_t over = layer_.size();
      for (size_t l = 0; l < layer_.size(); ++l)
        if (l != mine && layer_[l].count > layer_[l].share && !layer_[l].exhausted &&
            (over == layer_.size() || layer_[l].count - layer_[l].share > layer_[over].count - layer_[over].share))
          over = l;
      if (over == layer_.size()) break;
      if (int v = first_evictable(layer_[over].order, evictable); v >= 0) {
        clear_exhausted();
        return v;
      }
      layer_[over].exhausted = true;  // all its slots in use: try the next one
    }
    clear_exhausted();
    for (auto it = recency_.rbegin(); it != recency_.rend(); ++it)
      if (slot_[it->second].layer != mine && evictable(it->second)) return it->second;
    return first_evictable(layer_[mine].order, evictable);
  }

 private:
  struct Slot {
    int64_t key = -1;
    size_t layer = 0;
    double rank = 0, last = 0;
  };
  struct Layer {
    uint64_t share = 0, count = 0;
    Order order;
    bool exhausted = false;
    double visit_start = 0;  // clock of the first event of its latest visit
  };
  void visit(size_t layer) {
    if (layer == visiting_) return;
    visiting_ = layer;
    layer_[layer].visit_start = static_cast<double>(clock_ + 1);
  }
  size_t layer_of(int64_t key) const {
    const int64_t l = key / shape_.num_experts - shape_.first_layer;
    return static_cast<size_t>(std::clamp<int64_t>(l, 0, static_cast<int64_t>(layer_.size()) - 1));
  }
  void unlink(int slot) {
    const Slot& s = slot_[slot];
    layer_[s.layer].order.erase({s.rank, slot});
    recency_.erase({s.last, slot});
  }
  void clear_exhausted() {
    for (Layer& l : layer_) l.exhausted = false;
  }
  static int first_evictable(const Order& order, const std::function<bool(int)>& evictable) {
    for (const auto& [rank, slot] : order)
      if (evictable(slot)) return slot;
    return -1;
  }
  ExpertCacheShape shape_;
  bool frequency_;
  AgedCounts counts_;
  std::vector<Slot> slot_;
  std::vector<Layer> layer_;
  Order recency_;  // (last delivery, slot) over every layer
  uint64_t clock_ = 0;
  size_t visiting_ = SIZE_MAX;  // the layer of the latest event
};

}  // namespace

std::unique_ptr<ExpertCachePolicy> make_expert_cache_policy(ExpertCachePolicyKind kind, const ExpertCacheShape& shape,
                                                            uint64_t slots) {
  switch (kind) {
    case ExpertCachePolicyKind::kLru: return std::make_unique<GlobalPolicy>(shape, slots, false);
    case ExpertCachePolicyKind::kLfu: return std::make_unique<GlobalPolicy>(shape, slots, true);
    case ExpertCachePolicyKind::kLayer: return std::make_unique<LayerPolicy>(shape, slots, false);
    case ExpertCachePolicyKind::kLayerLfu: return std::make_unique<LayerPolicy>(shape, slots, true);
  }
  throw Error(ExitCode::kInternal, "unknown expert cache policy");
}

const std::vector<ExpertCachePolicyKind>& expert_cache_policy_kinds() {
  static const std::vector<ExpertCachePolicyKind> kKinds = {ExpertCachePolicyKind::kLru, ExpertCachePolicyKind::kLayer,
                                                            ExpertCachePolicyKind::kLayerLfu,
                                                            ExpertCachePolicyKind::kLfu};
  return kKinds;
}

const char* expert_cache_policy_name(ExpertCachePolicyKind kind) {
  switch (kind) {
    case ExpertCachePolicyKind::kLru: return "lru";
    case ExpertCachePolicyKind::kLayer: return "layer";
    case ExpertCachePolicyKind::kLayerLfu: return "layer-lfu";
    case ExpertCachePolicyKind::kLfu: return "lfu";
  }
  return "?";
}

ExpertCachePolicyKind parse_expert_cache_policy(const std::string& name, const std::string& what) {
  std::string names;
  for (ExpertCachePolicyKind k : expert_cache_policy_kinds()) {
    if (name == expert_cache_policy_name(k)) return k;
    names += std::string(names.empty() ? "" : ", ") + expert_cache_policy_name(k);
  }
  throw Error(ExitCode::kUsage, what + ": unknown expert cache policy '" + name + "' (one of " + names + ")");
}

}  // namespace k3
