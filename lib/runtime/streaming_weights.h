// A WeightSource that runs the model in a memory budget: the trunk through a
// TrunkStream (pinned sections, streamed sections and head blocks through a
// few buffers, embedding rows on demand) and the routed experts through an
// ExpertCache (an arena filled straight from the shards, its eviction
// policy chosen by the caller). Both share one
// ReadEngine and the open files. The bytes delivered are always the
// checkpoint's bytes, so the output does not depend on the budget.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "expert_cache/expert_cache.h"
#include "io/direct_file.h"
#include "io/read_engine.h"
#include "model/config.h"
#include "model/weight_source.h"
#include "planning/memory_plan.h"
#include "trunk/layout.h"
#include "trunk_stream/trunk_stream.h"

namespace k3 {

class Checkpoint;

struct StreamStats {
  uint64_t trunk_bytes = 0;        // trunk bytes read while running (streamed sections, embedding rows)
  uint64_t expert_bytes = 0;       // routed-expert bytes read while running
  uint64_t load_bytes = 0;         // pinned trunk read at start
  uint64_t experts_requested = 0;  // (layer, expert) deliveries asked for
  uint64_t experts_resident = 0;   // of those, already resident when the step began
  double io_wait_seconds = 0;      // compute thread blocked waiting for bytes
  double decode_seconds = 0;       // CPU seconds the I/O threads spent decoding a compressed trunk
  double io_busy_seconds = 0;      // at least one read in progress (the device kept busy)
  double load_seconds = 0;
  uint64_t units_not_ahead = 0;  // trunk units read only when asked for (not read ahead)
  // The expert cache's slots beyond the chunk's own lent to prefill chunks and
  // given back (ExpertCache::lend): how often, and the most bytes at once.
  uint64_t cache_lends = 0, cache_reclaims = 0, cache_lent_bytes = 0;
  uint64_t cache_lent_slots = 0;  // slots lent now: 0 once a chunk gave them back
  ExpertGuessStats guess;         // --expert-lookahead (zero without it)
  ExpertPhaseStats phases;        // where the disk idles around the MoE layers
  // Held chunks (TrunkStream::hold_layers): layer sections read whole, their
  // bytes (in trunk_bytes too), the lent pinned sections read again, and
  // the read-ahead dropped from the stream buffers lent to the hold.
  uint64_t held_layers = 0, held_bytes = 0, repinned_bytes = 0, dropped_ahead_bytes = 0;
  uint64_t skipped_layers = 0;  // layers over the hold limit, streamed in row blocks inside a chunk
};

class StreamingWeights : public WeightSource {
 public:
  // `trunk_dir` empty: trunk from the shards, all resident. `layout` is the
  // packed trunk's (or plan_trunk's for the shards) and `plan` the approved
  // memory plan for it. Throws k3::Error (kBadModel for a trunk whose pinned
  // blocks differ from their hashes, kIo for read failures).
  StreamingWeights(const ModelConfig& config, const Checkpoint& checkpoint, const std::string& trunk_dir,
                   TrunkLayout layout, const MemoryPlan& plan, int io_threads, const ProgressCallback& progress = {},
                   ExpertCachePolicyKind cache_policy = kDefaultExpertCachePolicy);
  ~StreamingWeights() override;

  void embed(const int32_t* ids, size_t n, float* out) override;
  const LayerWeights& acquire_layer(int layer) override;
  void release_layer(int layer) override;
  void prefetch_experts(int layer, const std::vector<int>& experts) override;
  void for_each_expert(int layer, const std::vector<int>& experts,
                       const std::function<void(size_t k, const ExpertWeights& w)>& on_ready) override;
  const HeadWeights& acquire_head() override;
  void release_head() override;
  void for_each_head_block(const HeadWeights& head, const HeadBlock& on_block) override;

  // --expert-lookahead: guess each MoE layer's experts with its router one
  // layer early and read them into cache slots the current layer does not
  // need. Layers whose trunk section is pinned only: a streamed router is
  // never read for a guess; none when the cache holds every expert. Off by
  // default; the output is the same either way.
  void set_expert_lookahead(bool on) { lookahead_ = on; }
  const MoeTrunkWeights* router_ahead(int layer) override;
  void prefetch_guess(int layer, const std::vector<int>& experts) override;
  // Where the plan lends the expert cache's slots beyond the chunk's own to a
  // prefill's chunk (MemoryPlan::cache_lent_bytes): they are dropped for the
  // chunk and given back, empty, after it. Where it holds each layer whole
  // (MemoryPlan::layer_held): the trunk holds its layers for the chunk
  // (TrunkStream::hold_layers), the pinned layer sections lent to it.
  bool lend_for_chunk() override;
  void reclaim_after_chunk() override;

  StreamStats stats() const;
  bool direct_io() const;  // every file opened with O_DIRECT

 private:
  // Declared before the parts that read through them: destroyed after them.
  std::vector<std::unique_ptr<DirectFile>> shard_files_;
  std::unique_ptr<DirectFile> trunk_file_;
  ReadEngine io_;
  std::unique_ptr<TrunkStream> trunk_;
  std::unique_ptr<ExpertCache> experts_;
  double load_seconds_ = 0;
  bool lookahead_ = false;
  uint64_t lend_keep_ = 0;  // slots kept while a chunk borrows the rest (MemoryPlan::chunk_slots); 0: no lending
  bool cache_lent_ = false;
  bool hold_layers_ = false, lend_pinned_ = false;  // MemoryPlan::layer_held, pinned_lent_bytes > 0
  uint64_t hold_limit_ = 0;                         // MemoryPlan::hold_limit
  // Per decoder layer: its router may guess (its trunk section is pinned,
  // and the cache does not hold every expert already).
  std::vector<bool> guessable_;
};

}  // namespace k3
