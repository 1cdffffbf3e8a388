// Layer generate: the generation session (prefill, decode, sampling, stops, state) as a library object.
//
// The generation layer: one sequence being generated, as a library object.
//
// A GenerationSession owns what a generation carries from token to token:
// the engine's SequenceState, the sampler, the stop conditions, the logits
// log and the counters. Tools (k3-forward, k3-chat) are front ends over it.
//
// The sequence is made of evaluated ids (in the state, with the logits of the
// last one kept as the "current row") followed by pending ids: ids that are
// known (emitted, or given) but not evaluated yet. The next id is sampled from
// the current row at position() = evaluated + pending, which is only possible
// when nothing is pending.
//
//   GenerationSession s(engine, options);
//   s.reset();                         // or s.restore(load_conversation(...))
//   s.feed(prompt_ids);                // prefill: pending + prompt in one batch
//   s.generate(64, emit, interrupted); // sample, emit, stop, evaluate, repeat
//   s.save_conversation(path, model);  // the generated last id stays pending
//
// The last generated id is emitted but not evaluated (evaluating it costs a
// whole forward step that only a continuation needs): it stays pending, and
// the next feed() evaluates it together with the new ids. So a chat turn is
// feed(new ids) + generate(), and a continued run computes exactly what one
// run over the whole conversation computes (logits memcmp-identical).
//
// mark()/rollback() take and restore a save point (all of the above but the
// counters), e.g. to regenerate a chat turn from an earlier point.
//
// Every path gives the same ids and the same logits bits: incremental decode,
// --recompute, prompts split into batches, continued runs.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "constrain/output_constraint.h"
#include "model/forward_pass.h"
#include "model/sequence_state.h"
#include "sampling/draft_source.h"
#include "sampling/generation_counters.h"
#include "sampling/generation_options.h"
#include "sampling/logits_log.h"
#include "sampling/sampler.h"
#include "sampling/stop_conditions.h"
#include "state/save_point.h"
#include "state/state_file.h"

namespace k3 {

struct ModelIdentity;

class GenerationSession {
 public:
  GenerationSession(ForwardPass& engine, GenerationOptions options);

  // A new, empty sequence.
  void reset();
  // Continues a saved conversation: its state, pending ids and last logits.
  // The sampler settings are the caller's (resolve_sampling() combines the
  // saved ones with flags) and were given in the options.
  void restore(ConversationState&& saved);

  // Evaluates the pending ids followed by `ids` as one prefill (batches of the
  // engine's max batch). `all_rows`, when given, receives their logits
  // [pending + ids, vocab] (teacher forcing). `progress` is called per layer
  // step and may throw to abandon the prefill (the session is then unusable
  // until reset()/restore()). Throws kBadInput for an id outside the
  // vocabulary, before touching the state.
  void feed(std::span<const int32_t> ids, std::vector<float>* all_rows = nullptr,
            const ForwardPass::Progress& progress = nullptr);
  // feed(ids), returning the save point after its first `keep` ids
  // (1 .. ids.size()), taken inside the prefill: what mark() would give had
  // the prefill ended there, while the prefill does not end there (a chat's
  // kept prefix costs no read of the weights of its own).
  k3::SavePoint feed_keeping(std::span<const int32_t> ids, size_t keep,
                             const ForwardPass::Progress& progress = nullptr);

  // Generates up to `max_new` ids: each is sampled from the current row,
  // passed to `on_token` (which may throw to abort), and, unless it stops
  // the generation or is the last one, evaluated. `interrupted` is polled
  // before each id. Evaluates pending ids first if any.
  GenerationEnd generate(int64_t max_new, const std::function<void(int32_t)>& on_token,
                         const std::function<bool()>& interrupted = nullptr);

  // Speculative decoding (options.max_drafts > 0): before each pass the
  // source proposes drafts; the current id and the drafts are evaluated as
  // one batch and the longest prefix the model itself would have chosen is
  // kept (the sampler's draw is keyed to the position, so a draft is kept
  // when it equals the sampled id). Rejected rows are rolled back in every
  // layer (ForwardPass::rollback) and never logged: ids, logits and saved state
  // are bit-identical to generating without drafts. The source must outlive
  // the session's generate() calls; nullptr turns drafting off.
  void set_draft_source(DraftSource* source) { drafts_ = source; }

  // Lets generate() stop a weight pass part-way, within about a layer of
  // `interrupted` turning true, instead of at the next id (a K3 pass read
  // from disk takes seconds). With `keep_state` the sequence is put back as
  // it was before that pass (ForwardPass::set_stop: one more KDA state in
  // memory), so it can still be saved or continued; without, the session
  // must be reset or restored before further use. Not under --recompute
  // with `keep_state` (its pass starts from an empty state).
  // `pass_stop`, when given, is what the passes poll instead of
  // `interrupted` (a chat ends its reply between ids for other reasons too).
  void set_stop_within_pass(bool on, bool keep_state, std::function<bool()> pass_stop = nullptr) {
    stop_within_pass_ = on;
    keep_state_on_stop_ = keep_state;
    pass_stop_ = std::move(pass_stop);
  }
  // Whether the last generate() stopped a pass part-way (without keep_state
  // the sequence is then between two layers and must be reset or restored).
  bool pass_cut() const { return pass_cut_; }

  // Structured output: every id chosen (sampled, greedy, or checked against
  // a draft) is chosen among the ids `constraint` allows, and every id kept
  // is accepted by it; a drafted id it does not allow is rejected like any
  // draft the model would not choose, so ids stay those of a run without
  // drafts. When it is finished generate() ends as at a stop id. It must
  // outlive the generate() calls; nullptr: unconstrained.
  void set_constraint(OutputConstraint* constraint) { constraint_ = constraint; }
  OutputConstraint* constraint() const { return constraint_; }

  // Called with every id generated, the logits row it was chosen from (as the
  // engine computed it) and its position, e.g. for --logprobs: once per
  // position, in order, with or without drafts (a rejected draft's position
  // is reported for the id generated there, never for the draft).
  using SampleObserver = std::function<void(int32_t id, const float* row, int64_t position)>;
  void set_sample_observer(SampleObserver observer) { sample_observer_ = std::move(observer); }

  // Called after each weight pass generate() runs, with its rows (1 for a
  // plain decode step, 1 + drafts for a verification), e.g. to attribute
  // bytes read to passes of each size.
  using PassObserver = std::function<void(size_t rows)>;
  void set_pass_observer(PassObserver observer) { pass_observer_ = std::move(observer); }

  // The single steps generate() is made of, for callers that drive the loop.
  // sample(): the next id from the current row (requires nothing pending);
  // it becomes pending. evaluate_pending(): runs the pending ids (decode).
  int32_t sample();
  void evaluate_pending();

  // Whether an id can be sampled now or after evaluating the pending ones
  // (false for a fresh sequence, or a restored one with nothing to go on).
  bool can_generate() const { return !pending_.empty() || has_row_; }

  // Position of the next id to sample: evaluated + pending ids.
  int64_t position() const { return state_.positions + static_cast<int64_t>(pending_.size()); }
  const SequenceState& state() const { return state_; }
  const std::vector<int32_t>& pending() const { return pending_; }
  // Logits of the last evaluated position ([vocab]; empty before any).
  const std::vector<float>& current_row() const { return row_; }
  const GenerationCounters& counters() const { return counters_; }
  const LogitsLog& logits_log() const { return log_; }
  const SamplingParams& sampling() const { return sampler_.params(); }
  const StopConditions& stop_conditions() const { return options_.stop; }

  // Save points: everything but the counters.
  using SavePoint = k3::SavePoint;  // state/save_point.h
  SavePoint mark() const;
  void rollback(SavePoint point);
  // mark() without the copy: the state moves out (the session must be reset,
  // restored or rolled back before further use).
  SavePoint release();

  // Writes a state file (state/continuation.h) that continues this sequence.
  void save_conversation(const std::string& path, const ModelIdentity& model) const;
  // Same, moving the state into the writer (the session must be reset or
  // restored before further use): saves a copy of a K3-size state.
  void save_conversation_and_release(const std::string& path, const ModelIdentity& model);

 private:
  friend class BatchGeneration;  // steps several sessions in one weight pass
  void evaluate(std::span<const int32_t> ids, LogitRows rows, float* out, std::span<StateCapture> captures = {});
  // feed() with the captures of its prefill (rows counted with the pending ids).
  void feed_capturing(std::span<const int32_t> ids, std::vector<float>* all_rows, const ForwardPass::Progress& progress,
                      std::span<StateCapture> captures);
  // The sampler's id for `position` from `row`; `before`: the ids before it.
  int32_t choose(const float* row, int64_t position, std::span<const int32_t> before);
  GenerationEnd generate_steps(int64_t max_new, const std::function<void(int32_t)>& on_token,
                               const std::function<bool()>& interrupted);
  enum class Verified { kContinue, kStop, kLength, kInterrupted };
  Verified verify(const std::vector<int32_t>& drafts, int64_t& made, int64_t max_new,
                  const std::function<void(int32_t)>& emit, const std::function<bool()>& interrupted);

  ForwardPass& engine_;
  GenerationOptions options_;
  Sampler sampler_;
  LogitsLog log_;
  SequenceState state_;
  std::vector<int32_t> pending_;
  std::vector<float> row_;
  bool has_row_ = false;
  GenerationCounters counters_;
  DraftSource* drafts_ = nullptr;
  PassObserver pass_observer_;
  RowHistory history_;  // of the last verification pass, reused
  bool stop_within_pass_ = false, keep_state_on_stop_ = false, pass_cut_ = false;
  std::function<bool()> pass_stop_;
  SampleObserver sample_observer_;
  OutputConstraint* constraint_ = nullptr;
  // Whether generation ends after `id`: a stop id, or the constraint is finished.
  bool ends_at(int32_t id) { return options_.stop.stops(id) || (constraint_ && constraint_->finished()); }
};

}  // namespace k3
