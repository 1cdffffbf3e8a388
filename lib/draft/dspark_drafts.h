// DSpark as a draft source for the generation session's speculation
// (sampling/draft_source.h), fed by the engine's layer tap (model/layer_tap.h).
//
// The taps of every pass arrive per position; a position's taps are fused
// into the draft's context once it is committed (docs/dspark.md):
//  * prefill batches (more rows than any verification has) are fused as they
//    arrive, so a long prompt never holds more than one batch of taps;
//  * a verification's rows wait until the next propose(): only the anchor and
//    the accepted drafts are then below the anchor's position and get fused;
//    rejected rows are superseded by the next pass at the same positions.
// Positions are absolute: a pass at positions already fused (a rollback, a
// rewind, a recomputation) truncates the context to where it starts.
//
// Each propose() runs one draft pass (block_size rows) and returns the first
// k drafts, k from the verify-length policy (verify_policy.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "draft/draft_pass.h"
#include "draft/verify_policy.h"
#include "model/layer_tap.h"
#include "model/weight_source.h"
#include "sampling/draft_source.h"

namespace k3 {

// One draft pass, as --draft-log writes it.
struct DraftLogEntry {
  int64_t anchor_pos = 0;
  int32_t anchor_id = 0;
  std::vector<int32_t> draft;  // all block_size drafts of the pass
  size_t verified = 0, accepted = 0;
};

struct DSparkStats {
  int64_t passes = 0;                // draft passes run
  int64_t proposed = 0;              // draft ids computed (block_size per pass)
  int64_t verified = 0;              // of those, handed to the target to verify
  int64_t accepted = 0;              // of those, kept
  int64_t positions_fused = 0;       // committed positions fused into the context
  int64_t skipped_long_context = 0;  // passes not run: context past the policy's limit
  int64_t skipped_no_taps = 0;       // passes not run: positions whose taps were never seen
};

class DSparkDrafts : public DraftSource, public LayerTap {
 public:
  DSparkDrafts(const DSparkModel& model, WeightSource& target, ThreadPool* pool, VerifyPolicy policy);
  ~DSparkDrafts() override;

  // Only the taps of this sequence are used (nullptr: any).
  void attach(const SequenceState* state) {
    sequence_ = state;
    detached_ = false;
  }
  // No taps are used until the next attach() (a server's draft between the
  // sequences it follows).
  void detach() { detached_ = true; }
  // Forgets the context and the kept taps (and logs a pass still waiting),
  // for a sequence that starts anew; the stats and the policy's measured
  // acceptance stay.
  void reset();
  // Receives every draft pass once its verdict is known.
  void set_log(std::function<void(const DraftLogEntry&)> log) { log_ = std::move(log); }
  // Teacher forcing keeps every tap until draft_at() has used it.
  void set_keep_taps(bool keep) { keep_taps_ = keep; }

  // DraftSource.
  std::vector<int32_t> propose(std::span<const int32_t> context, size_t max) override;
  void verified(size_t proposed, size_t accepted) override;

  // LayerTap.
  bool wants(int layer) const override;
  void on_layer(int layer, const SequenceState& state, int64_t pos0, const float* rows, size_t n) override;

  // A draft pass with the anchor `anchor` at position `pos` over the context
  // of positions 0 .. pos-1 (their taps seen and kept), logged unverified.
  DraftPassResult draft_at(int64_t pos, int32_t anchor);
  // Writes the log entry of a pass still waiting for a verdict.
  void flush();

  const DSparkStats& stats() const { return stats_; }
  const VerifyPolicy& policy() const { return policy_; }
  const DraftContext& context() const { return context_; }

 private:
  // Fuses the positions from context_.positions up to `end` (taps all seen).
  bool fuse_until(int64_t end);

  const DSparkModel& model_;
  WeightSource& target_;
  ThreadPool* pool_;
  VerifyPolicy policy_;
  const SequenceState* sequence_ = nullptr;
  bool detached_ = false;
  std::function<void(const DraftLogEntry&)> log_;
  bool keep_taps_ = false;
  std::vector<int> slots_;  // per tapped layer (by target_layer_ids order): its layer id
  int first_layer_ = 0, last_layer_ = 0;
  DraftContext context_;
  // Taps of positions taps_begin_ .. taps_begin_ + rows: [row][num_taps * hidden];
  // complete up to taps_end_.
  std::vector<float> taps_;
  int64_t taps_begin_ = 0, taps_end_ = 0;
  std::optional<DraftLogEntry> waiting_;
  DSparkStats stats_;
};

}  // namespace k3
