// Layer expert_cache: the routed-expert cache (arena, slots, eviction policy, lookahead, routing traces).
// The routed-expert cache of a model run in a memory budget.
//
// Experts are read straight from the shards with O_DIRECT into an arena of
// cache slots (one slot = one expert's tensors, ExpertIndex's reads); when
// none is free, the eviction policy (expert_cache/expert_cache_policy.h, through
// ExpertSlots) chooses which cached expert makes room.
// prefetch() starts the reads of a layer's selected experts as soon as the
// routing is known; for_each() then hands every selected expert to the model
// as soon as its bytes have arrived (resident ones first, while the reads
// run), issuing the misses prefetch() had no slot for as slots free up. An
// expert a layer is using is never evicted. The bytes delivered are always
// the checkpoint's bytes, so the output does not depend on the cache size.
//
// prefetch_guess() (opt-in, --expert-lookahead) reads, while a layer
// computes, the experts the next layers are guessed to use, into free or
// evictable slots only, never one holding an expert of the current layer,
// so only once every expert of the current layer has its slot; and those
// reads start only once every read of the current layer has landed (a
// guess never delays the layer that is computing, not even by sharing the
// disk with its last reads). When the guessed layer routes, the pieces not
// started yet of its guessed reads it does not use are cancelled (a read
// none of whose pieces started frees its slot at once, nothing read; a cut
// one when its started pieces land) and those it uses move ahead of every
// other background read. A guessed read that is evicted before any layer
// asked for it is counted as wasted.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "expert_cache/expert_cache_policy.h"
#include "expert_cache/expert_index.h"
#include "expert_cache/expert_slots.h"
#include "io/aligned_buffer.h"
#include "io/direct_file.h"
#include "io/read_engine.h"
#include "model/config.h"
#include "model/weights.h"

namespace k3 {

class Checkpoint;

// What --expert-lookahead's guesses did (ExpertCache::prefetch_guess).
struct ExpertGuessStats {
  uint64_t layers = 0;   // layers whose experts were guessed one layer early
  uint64_t experts = 0;  // distinct (layer, expert) guesses
  uint64_t used = 0;     // of those, used by that layer's own routing (the guess was right)
  uint64_t reads = 0;    // guessed experts read because of the guess (neither resident nor in flight)
  uint64_t read_bytes = 0;
  uint64_t reads_used = 0;    // of those reads, asked for by a layer before their slot was reused
  uint64_t wasted_reads = 0;  // of those reads, evicted before any layer asked for them
  uint64_t wasted_bytes = 0;
  // Of those reads, cancelled when their layer routed without them: the
  // bytes of their pieces still queued then, never read (a read none of
  // whose pieces had started frees its slot at once, no byte read).
  uint64_t cancelled_reads = 0;
  uint64_t cancelled_bytes = 0;
};

// Where the disk idles (ReadEngine::busy_seconds: at least one read in
// progress) around the MoE layers: each layer's expert phase, from its
// routing (prefetch) to its last expert delivered; the gap from one MoE
// layer's end to the next one's routing (attention, norms, router); the
// same gap across a pass boundary (the head, the next token's embedding and
// the layers before the first MoE layer).
struct ExpertPhaseStats {
  double experts_seconds = 0, experts_busy_seconds = 0;
  double between_seconds = 0, between_busy_seconds = 0;
  double boundary_seconds = 0, boundary_busy_seconds = 0;
};

struct ExpertCacheStats {
  uint64_t expert_bytes = 0;       // read while running (guessed reads included)
  uint64_t load_bytes = 0;         // read at start (a cache that holds every expert)
  uint64_t experts_requested = 0;  // (layer, expert) deliveries asked for
  // Of those, already resident when for_each began; for a chunk's later
  // groups of a layer (for_each again after the layer's one prefetch), when
  // the prefetch began: an expert read for an earlier group is no hit.
  uint64_t experts_resident = 0;
  double io_wait_seconds = 0;  // compute thread blocked waiting for expert bytes
  // lend(): how often the slots beyond the chunk's own were lent to a prefill's
  // chunk and taken back (reclaim), and the most bytes lent at once.
  uint64_t lends = 0, reclaims = 0, lent_bytes = 0;
  ExpertGuessStats guess;
  ExpertPhaseStats phases;
};

class ExpertCache {
 public:
  // An arena of `slots` slots. The shard files (parallel to the checkpoint's
  // shards) and `io` must outlive the cache. A cache with a slot for every
  // routed expert is filled here: the run is then fully resident. Throws
  // k3::Error (kBadModel for a missing expert tensor or a bad scale byte,
  // kIo for read failures). `policy` picks the victims (not the bytes).
  ExpertCache(const ModelConfig& config, const Checkpoint& checkpoint,
              const std::vector<std::unique_ptr<DirectFile>>& shard_files, uint64_t slots, ReadEngine& io,
              ExpertCachePolicyKind policy = kDefaultExpertCachePolicy);
  ~ExpertCache();  // waits for reads still in flight (they write into the arena)
  ExpertCache(const ExpertCache&) = delete;
  ExpertCache& operator=(const ExpertCache&) = delete;

  // Starts reading those of `experts` that are neither resident nor already
  // being read, while free or evictable slots last (never evicting one of
  // `experts`). A hint: changes nothing but timing.
  void prefetch(int layer, const std::vector<int>& experts);

  // The experts a later `layer` is guessed to use (distinct), given after
  // the current layer's prefetch() (one or more layers ahead; the nearer
  // layer's guess first, each in the order given: best first): reads those
  // neither resident nor in flight (speculative reads of the ReadEngine,
  // once the current layer's for_each has all its bytes) while free or
  // evictable slots last, evicting none of the current layer's experts nor
  // of any guess not yet scored: when the current layer still lacks a slot
  // there is none for a guess either. Guesses for one layer from two layers
  // add up (their union is scored). A hint: changes nothing but timing and
  // the bytes read. A layer "asks for" a guessed expert through prefetch(),
  // as the model does before for_each; its prefetch() cancels the guessed
  // reads it does not ask for that have not started.
  void prefetch_guess(int layer, const std::vector<int>& experts);

  // Calls on_ready(k, w) exactly once for every experts[k], as its bytes
  // become available, and returns when all were delivered. Throws
  // k3::Error(kIo) with the first read error (after every read of the call
  // has landed; no further expert is delivered after it), or rethrows what
  // on_ready threw.
  void for_each(int layer, const std::vector<int>& experts,
                const std::function<void(size_t k, const ExpertWeights& w)>& on_ready);

  // Waits for every read in flight and keeps what arrived as cached experts
  // (a guessed read nobody asked for yet, a prefetch of a failed step).
  // Between layers only, never during for_each; tests use it to make what is
  // resident, so what is evicted next, independent of the disk's timing.
  void settle();

  // During a layer-major prefill the cache does nothing useful (each expert
  // a chunk's rows chose is read once per layer for the whole chunk), so its
  // memory above the first `keep` slots (the floor: one layer's top-k) is
  // lent to the chunk: reads in flight land (settle), the experts of the
  // slots from `keep` on are dropped, their pages given back to the system,
  // and until reclaim() the cache runs on `keep` slots. reclaim() gives the
  // slots back empty: decode refills them as it misses. Between layers
  // only (expert_cache_loan.cpp). Returns the bytes lent.
  uint64_t lend(uint64_t keep);
  void reclaim();
  uint64_t lent_slots() const { return slots_.lent(); }

  uint64_t slots() const { return slots_.size(); }
  uint64_t slot_bytes() const { return slot_bytes_; }
  uint64_t arena_bytes() const { return slot_bytes_ * slots_.size(); }
  ExpertCachePolicyKind policy() const { return policy_; }
  // Whether (layer, expert) is in the cache now (not counting reads in flight).
  bool resident(int layer, int expert) const;
  ExpertCacheStats stats() const;

 private:
  struct Arrival {
    int64_t key;
    int slot;
    std::string error;
  };
  // A slot for `key` (ExpertSlots::take: a free one, else the policy's
  // victim, never one in use or in `keep`); -1 when there is none.
  int take_slot(int64_t key, const std::vector<int64_t>* keep = nullptr);
  // Starts reading (layer, expert) into `slot`; its Arrival comes later.
  // Background reads queue behind the urgent ones (experts a layer needs).
  // Starts the guessed reads prefetch_guess held back (flush_guesses: once
  // the current layer's reads have all landed, or before anything waits).
  void flush_guesses();
  // A guessed read (`urgent` false) is marked in the slot table until a
  // layer asks for it. Returns the ReadEngine group id.
  uint64_t issue_read(int layer, int expert, int slot, bool urgent = true);
  // `layer` routed to `keys`: the queued pieces of its guessed reads not in
  // `keys` are cancelled (slots freed), those in `keys` promoted to urgent.
  void resolve_guesses(int layer, const std::vector<int64_t>& keys);
  // The slot of `key`, resident or in flight; -1 when neither.
  int slot_of(int64_t key);
  // Counts the guess for `layer` against the experts it really uses.
  void score_guess(int layer, const std::vector<int64_t>& keys);
  // An arrival nobody is waiting for (a prefetched expert of a call that
  // failed): kept as an ordinary cached expert, or its slot freed.
  void keep_stray(const Arrival& a);
  // ExpertPhaseStats: a layer's expert phase opens at its routing (or at
  // for_each when no prefetch came first) and closes when for_each returns;
  // a chunk's later groups of the layer reopen it (phase_continue), so its
  // calls are one phase, not a pass boundary each.
  void phase_begin(int layer);
  void phase_continue();
  void phase_end(int layer);
  // for_each's phase: begun, or continued for a chunk's later group of the
  // layer (true).
  bool open_phase(int layer);
  // Of a later group's hits (indices into `experts`), those resident when
  // the layer's prefetch began.
  size_t resident_at_prefetch(int layer, const std::vector<int>& experts, const std::vector<size_t>& hits) const;
  void preload();
  uint8_t* slot_base(int slot) { return arena_.data() + static_cast<uint64_t>(slot) * slot_bytes_; }
  ExpertWeights bind(int layer, int expert, const uint8_t* base) const;
  void check_scales(int layer, int expert, const uint8_t* base) const;
  // (layer, expert)'s key in the slot table, the policy and the maps below.
  int64_t key(int layer, int expert) const { return static_cast<int64_t>(layer) * config_.num_experts + expert; }
  int layer_of(int64_t key) const { return static_cast<int>(key / config_.num_experts); }
  int expert_of(int64_t key) const { return static_cast<int>(key % config_.num_experts); }

  ModelConfig config_;
  ExpertIndex index_;
  const std::vector<std::unique_ptr<DirectFile>>& shard_files_;
  ReadEngine& io_;

  uint64_t slot_bytes_ = 0;
  AlignedBuffer arena_;
  ExpertCachePolicyKind policy_;
  ExpertSlots slots_;                   // key (layer * num_experts + expert) per slot, in use, free, victims
  std::vector<ExpertWeights> weights_;  // per slot: its expert's tensors in the arena
  std::mutex arrivals_mu_;
  std::condition_variable arrivals_cv_;
  std::deque<Arrival> arrivals_;
  std::unordered_map<int64_t, int> pending_;  // reads issued and not yet taken from arrivals_: key -> slot
  bool guessing_ = false;                     // prefetch_guess was called: prefetch scores the guesses
  // The last prefetch: its layer and keys.
  int current_layer_ = -1;
  std::vector<int64_t> current_keys_;
  // The guesses not scored yet: per guessed layer, its distinct guessed keys
  // (one layer or two ahead), until that layer's prefetch scores them.
  struct Guess {
    int layer;
    std::vector<int64_t> keys;
  };
  std::vector<Guess> guesses_;
  // Guessed reads with their slot taken (and their key in pending_), not
  // started yet: (layer, expert, slot).
  struct HeldRead {
    int layer, expert, slot;
  };
  std::vector<HeldRead> held_;
  // Guessed reads handed to the ReadEngine and not resolved yet: key ->
  // group id (resolve_guesses cancels or promotes them).
  std::unordered_map<int64_t, uint64_t> guess_reads_;

  // Phase bookkeeping: written by the compute thread under stats_mu_ (stats() reads it).
  int phase_layer_ = -1;     // the layer whose expert phase is open
  int last_end_layer_ = -1;  // the layer whose expert phase closed last
  // The layer whose phase its prefetch opened (-1 once for_each opens one
  // without), and its keys resident then, sorted: a chunk's later groups
  // continue that phase, and count only those as resident.
  int prefetched_layer_ = -1;
  std::vector<int64_t> prefetch_resident_;
  std::chrono::steady_clock::time_point phase_start_, last_end_;
  double phase_start_busy_ = 0, last_end_busy_ = 0;  // ReadEngine::busy_seconds then

  mutable std::mutex stats_mu_;
  ExpertCacheStats stats_;
};

}  // namespace k3
