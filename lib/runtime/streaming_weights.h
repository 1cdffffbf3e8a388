// A WeightSource that runs the model in a memory budget.
//
// Trunk: sections of a packed trunk (k3-pack) that the plan pins are read
// once at start (and their xxh3 checked); the others stream through two
// buffers, the next one read in the background while the current layer
// computes. A streamed head goes through the same buffers as lm_head row
// blocks (its small tensors are read once and kept), so no buffer is ever
// the size of the head. Without a packed trunk every trunk tensor is read
// from the shards once and held. Embedding rows are read on demand.
//
// Routed experts: read straight from the shards with O_DIRECT into an LRU
// arena of cache slots. After routing, every selected expert that is not
// resident is requested at once, and each is handed to the model as soon as
// its bytes have arrived (resident ones first, while the reads run). The
// bytes delivered are always the checkpoint's bytes, so the output does not
// depend on the budget.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "checkpoint/trunk_layout.h"
#include "io/aligned_buffer.h"
#include "io/direct_file.h"
#include "io/read_engine.h"
#include "model/config.h"
#include "model/weight_source.h"
#include "runtime/expert_index.h"
#include "runtime/memory_plan.h"

namespace k3 {

class Checkpoint;

struct StreamStats {
  uint64_t trunk_bytes = 0;          // trunk bytes read while running (streamed sections, embedding rows)
  uint64_t expert_bytes = 0;         // routed-expert bytes read while running
  uint64_t load_bytes = 0;           // pinned trunk read at start
  uint64_t experts_requested = 0;    // (layer, expert) deliveries asked for
  uint64_t experts_resident = 0;     // of those, already resident when the step began
  double io_wait_seconds = 0;        // compute thread blocked waiting for bytes
  double io_busy_seconds = 0;        // at least one read in progress (the device kept busy)
  double load_seconds = 0;
};

class StreamingWeights : public WeightSource {
 public:
  // `trunk_dir` empty: trunk from the shards, all resident. `layout` is the
  // packed trunk's (or plan_trunk's for the shards) and `plan` the approved
  // memory plan for it. Throws k3::Error (kBadModel for a trunk whose pinned
  // section hash differs, kIo for read failures).
  StreamingWeights(const ModelConfig& config, const Checkpoint& checkpoint, const std::string& trunk_dir,
                   TrunkLayout layout, const MemoryPlan& plan, int io_threads);
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

  StreamStats stats() const;
  bool direct_io() const;  // every file opened with O_DIRECT

 private:
  struct Section;
  struct StreamBuffer;
  struct Slot;
  struct Arrival {
    int64_t key;  // layer * num_experts + expert
    int slot;
    std::string error;
  };

  // What passes through a stream buffer: a layer section, or `rows` rows of
  // lm_head from `first_row`.
  struct Unit {
    int section = -1;
    int64_t first_row = 0, rows = 0;  // rows > 0: a head block
  };
  StreamBuffer& acquire_unit(int u);
  void release_unit(int u);
  void issue_stream_read(StreamBuffer& b, int u, bool urgent);
  void wait_buffer(StreamBuffer& b);
  // Starts background reads of the `count` units after `u` (in use order,
  // wrapping to the next token) into buffers nobody holds or awaits.
  void read_ahead(int u, int count);
  const void* section_tensor(const Section& sec, const uint8_t* base, const std::string& name) const;
  // A free slot, else the least recently used one not in use and not in
  // `keep` (keys); -1 when there is none.
  int take_slot(const std::vector<int64_t>* keep = nullptr);
  // Starts reading (layer, expert) into `slot`; its Arrival comes later.
  void issue_expert_read(int layer, int expert, int slot);
  // An arrival nobody is waiting for (a prefetched expert of a call that
  // failed): kept as an ordinary cached expert, or its slot freed.
  void keep_stray(const Arrival& a);
  void preload_experts();
  ExpertWeights bind_expert(int layer, int expert, const uint8_t* base) const;
  void check_scales(int layer, int expert, const uint8_t* base) const;

  ModelConfig config_;
  std::string trunk_dir_;
  TrunkLayout layout_;
  ExpertIndex experts_;
  std::vector<std::unique_ptr<DirectFile>> shard_files_;
  std::unique_ptr<DirectFile> trunk_file_;
  ReadEngine io_;

  std::vector<std::unique_ptr<Section>> sections_;  // parallel to layout_.sections
  std::vector<int> layer_section_;
  int head_section_ = -1, embed_section_ = -1;
  std::vector<Unit> units_;                         // streamed units in use order
  std::vector<int> section_unit_;                   // section -> its unit, -1 when pinned or the head
  int head_unit0_ = -1;                             // first head block, -1 when the head is pinned
  uint64_t lm_head_offset_ = 0;                     // in trunk.bin
  std::vector<AlignedBuffer> head_small_;           // norms of a streamed head
  HeadWeights head_small_hw_;
  std::vector<std::unique_ptr<StreamBuffer>> buffers_;

  // Expert cache.
  uint64_t slot_bytes_ = 0;
  AlignedBuffer arena_;
  std::vector<Slot> slots_;
  std::unordered_map<uint64_t, int> resident_;  // layer * E + expert -> slot
  std::vector<int> free_slots_;
  uint64_t tick_ = 0;
  std::mutex arrivals_mu_;
  std::condition_variable arrivals_cv_;
  std::deque<Arrival> arrivals_;
  std::unordered_map<int64_t, int> pending_;  // expert reads issued and not yet taken from arrivals_: key -> slot

  const DirectFile* embed_file_ = nullptr;
  uint64_t embed_base_ = 0;
  AlignedBuffer row_buf_;
  mutable std::mutex stats_mu_;
  StreamStats stats_;
};

}  // namespace k3
