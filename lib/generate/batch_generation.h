// Several sequences generated together (k3-forward --batch): every step
// samples one id per sequence and evaluates all of them in one weight pass
// (ForwardPass::forward_sequences), so the trunk is read once per step for the
// whole batch and each routed expert once for all the rows that chose it.
// Each sequence's ids and logits are bit-identical to generating it alone
// (its own sampler, draws keyed to its positions). A sequence that stops
// (stop id or its --gen count) leaves the batch at once; the others go on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "generate/generation_session.h"

namespace k3 {

class BatchGeneration {
 public:
  // The sessions are fed (prompt evaluated, nothing pending) and share `engine`.
  BatchGeneration(ForwardPass& engine, std::vector<GenerationSession*> sessions);

  // Generates up to `max_new` ids per sequence. on_token(i, id) for each id of
  // sequence i; on_end(i, why) when sequence i leaves the batch (every
  // sequence gets exactly one on_end). `interrupted` is polled before each step;
  // `on_pass(rows)` after each weight pass.
  void generate(int64_t max_new, const std::function<void(size_t, int32_t)>& on_token,
                const std::function<void(size_t, GenerationEnd)>& on_end,
                const std::function<bool()>& interrupted = nullptr,
                const std::function<void(size_t rows)>& on_pass = nullptr);

  int64_t weight_passes() const { return passes_; }

  // One decode pass for sessions that each hold exactly one pending id (just
  // sampled): evaluates them together in one weight pass, as generate() does
  // per step. For a front end that changes the set of sequences between
  // passes (k3-serve: requests join and leave at any pass). Each session's
  // logits are bit-identical to evaluating it alone.
  static void step(ForwardPass& engine, std::span<GenerationSession* const> sessions);

  // One weight pass over the pending ids followed by `ids[k]` of each
  // session k (a prompt chunk, or nothing for a decode row; each session
  // must have some row): prompt chunks of new requests share the pass with
  // the decode rows of running ones. Each session's current row becomes the
  // logits of its last id, bit-identical to feed()/evaluating it alone, so a
  // session whose prompt is done can sample next. Not for sessions that
  // log every row (k3-forward --logits): only last rows are computed.
  // `keeps`: save points taken inside the pass (state/save_point.h), one
  // returned for each in order, each what mark() would give had the pass
  // ended there; the pass still reads the weights once (ForwardPass
  // captures the states; a keep at a session's last id is its mark() after).
  static std::vector<SavePoint> step_rows(ForwardPass& engine, std::span<GenerationSession* const> sessions,
                                          std::span<const std::span<const int32_t>> ids,
                                          std::span<const SavePointWithin> keeps = {});

 private:
  // After a shared pass: row k of `logits` (vocab floats per session) becomes
  // session k's current row, and the pass is counted for it.
  static void take_row(GenerationSession& s, const std::vector<float>& logits, size_t k, size_t vocab);

  ForwardPass& engine_;
  std::vector<GenerationSession*> sessions_;
  int64_t passes_ = 0;
};

}  // namespace k3
