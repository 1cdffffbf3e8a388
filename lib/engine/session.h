// One sequence on a k3::Model (engine/model.h): prefill, step or generate
// with a token callback, save and restore, save points, prefix reuse,
// speculation, structured output and what a front end observes (logits,
// sampled rows, counters). Front ends (k3-forward, k3-chat, k3-serve) drive
// sequences only through it; several are stepped together in one weight
// pass by Model::step_rows and Model::decode_together. It is a layer over
// lib/generate's GenerationSession, which stays inside lib/engine: this
// header shows only plain types from the layers below generate/ (options,
// counters, draft sources, save points), never generate/ or the forward pass.
//
//   k3::Session s = model->session(options);       // options.max_drafts > 0: speculation
//   s.set_drafts(&ngram);                          // where drafts come from (sampling/draft_source.h)
//   s.prefill(prompt);                             // or s.restore(load_conversation(...))
//   s.generate(64, on_token, interrupted);         // or: int32_t id = s.step();
//   s.save(path, identity);                        // continues exactly where it stopped
//   s.prefill_reusing(next_prompt, keep);          // a next turn: evaluates only what is new
//
// Ids, logits and saved state are bit-identical whichever path produced them
// (one prefill or several, reused prefixes, speculation or not). Errors:
// kBadInput for an id outside the vocabulary (before the state changes), kIo
// for a state file that cannot be written. Driven from one thread at a time,
// as the model it belongs to; it must not outlive that model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/sequence_state.h"
#include "sampling/draft_source.h"
#include "sampling/generation_counters.h"
#include "sampling/generation_options.h"
#include "sampling/logits_log.h"
#include "sampling/stop_conditions.h"
#include "state/continuation.h"
#include "state/save_point.h"

namespace k3 {

class GenerationSession;
class Model;
class OutputConstraint;

class Session {
 public:
  // Called per layer step of a prefill (a progress line; may throw to abandon it).
  using Progress = std::function<void(int64_t done, int64_t total)>;

  Session(Model& model, std::unique_ptr<GenerationSession> generation);
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  // Empties the sequence and forgets the save point (a new conversation).
  void reset();
  // Continues a saved conversation (state/continuation.h). Its ids are not
  // known, so a later prefill_reusing() starts over.
  void restore(ConversationState&& saved);
  // Same, for a state saved by save_reusable(): its ids (the saved tokens and
  // pending ids) are taken as known, so prefill_reusing() goes on from it
  // when they are a prefix of the next prompt (k3-chat resuming a history).
  void restore_reusable(ConversationState&& saved);
  // Writes a state file that continues this sequence.
  void save(const std::string& path, const ModelIdentity& identity) const;
  // Writes the state a next prefill_reusing(`next`) would go on from, `next`
  // being the start every next prompt shares: the sequence itself when what
  // it holds is a prefix of `next`, else the newest save point whose ids
  // are. Returns the ids the file holds, 0 when neither is a prefix (nothing
  // is written then).
  size_t save_reusable(const std::string& path, const ModelIdentity& identity, std::span<const int32_t> next) const;

  // Evaluates `ids` after what the sequence holds (pending ids first), as one
  // prefill. `progress` is called per layer step and may throw to abandon
  // the prefill (the sequence then goes on from the last save point or
  // starts over at the next prefill_reusing(), or is reset()).
  // `all_rows`, when given, receives the logits of every id evaluated
  // ([pending + ids, vocab]: teacher forcing).
  void prefill(std::span<const int32_t> ids, const Progress& progress = nullptr,
               std::vector<float>* all_rows = nullptr);

  // Prefix reuse (k3-chat's rule): makes the sequence hold exactly `prompt`,
  // evaluating only what it lacks. It goes on from what it holds when that
  // (prompt and generated ids so far) is a prefix of `prompt`; else from the
  // save point of the previous call when that point's ids are a prefix;
  // else it starts over. A save point is then taken after the first
  // `keep_prefix` ids of `prompt` (clamped to its size), e.g. where a chat
  // prompt's re-rendered part begins. The last kSavePoints points are kept
  // (each a copy of the state), the longest that is a prefix is used: a chat
  // going back one exchange (/undo, a turn stopped by Ctrl-C) finds the
  // previous turn's point. The point is taken within the prefill of what
  // follows it (one read of the weights where a chunk holds both, not two),
  // with the same bits as a prefill ending there. Returns the ids reused
  // (not evaluated).
  size_t prefill_reusing(std::span<const int32_t> prompt, size_t keep_prefix, const Progress& progress = nullptr);

  // The next id: evaluates what is pending, samples one id from the current
  // row and returns it (it is pending until the next call).
  int32_t step();
  // Up to `max_new` ids, each passed to `on_token` as soon as it exists;
  // stops at a stop id (options.stop) or when `interrupted` says so: between
  // two ids, or with set_stop_within_pass() within about a layer of a pass
  // (the sequence is then left part-way: the next prefill_reusing() goes back
  // to a save point or starts over).
  GenerationEnd generate(int64_t max_new, const std::function<void(int32_t)>& on_token,
                         const std::function<bool()>& interrupted = nullptr);

  // The step generate() begins each id with, for a front end that drives the
  // loop (k3-serve's scheduler, whose passes are Model::step_rows): the
  // next id from the current row (nothing may be pending); it stays pending.
  int32_t sample();

  // Speculation: drafts come from `source` (nullptr: none), up to the
  // options' max_drafts per pass; output does not depend on them.
  void set_drafts(DraftSource* source);

  // Lets generate() stop a weight pass part-way, within about a layer of
  // `stop` saying so (a K3 pass read from disk takes seconds), as k3-forward
  // does with Ctrl-C; nullptr: passes run to the end.
  void set_stop_within_pass(std::function<bool()> stop);
  // Same, the passes polling generate()'s own `interrupted` (k3-forward).
  // With `keep_state` the sequence is put back as it was before the pass
  // cut, so it can still be saved (--state-out).
  void stop_passes_when_interrupted(bool keep_state);
  // Whether the last generate() stopped a pass part-way.
  bool pass_cut() const;

  // Structured output (constrain/output_constraint.h): ids are chosen among
  // those `constraint` allows; it must outlive the generate() calls; nullptr: none.
  void set_constraint(OutputConstraint* constraint);
  // Called with every id generated, the logits row it was chosen from and
  // its position (--logprobs), once per position, with or without drafts.
  using SampleObserver = std::function<void(int32_t id, const float* row, int64_t position)>;
  void set_sample_observer(SampleObserver observer);

  // Save points: the whole sequence (state, pending ids, current row), to
  // go back to with rollback() (a copy: the point stays usable). release()
  // moves the state out instead of copying it (the sequence is empty then).
  using SavePoint = k3::SavePoint;  // state/save_point.h
  SavePoint mark() const;
  void rollback(const SavePoint& point);
  SavePoint release();
  // save(), moving the state into the writer (the sequence is empty then):
  // no copy of a K3-size state.
  void save_and_release(const std::string& path, const ModelIdentity& identity);

  // Every id the sequence holds (evaluated and pending), when known.
  const std::vector<int32_t>& ids() const { return ids_; }
  // Ids evaluated and pending: the position of the next id.
  int64_t position() const;
  // Ids known but not evaluated yet (the last generated id, a restored state's).
  const std::vector<int32_t>& pending() const;
  // The evaluated state (a draft model follows it: DraftSource::attach).
  const SequenceState& state() const;
  // Logits of the last evaluated position ([vocab]; empty before any).
  const std::vector<float>& current_row() const;
  // Every evaluated row, with options.log_logits (k3-forward --logits).
  const LogitsLog& logits_log() const;
  const StopConditions& stop_conditions() const;
  const GenerationCounters& counters() const;
  Model& model() { return *model_; }

 private:
  friend class Model;  // steps several sessions in one weight pass
  Model* model_;
  std::unique_ptr<GenerationSession> gen_;
  std::vector<int32_t> ids_;
  bool ids_known_ = true;  // false after restore() or an abandoned prefill
  struct Point {
    SavePoint point;
    std::vector<int32_t> ids;
  };
  static constexpr size_t kSavePoints = 2;
  std::vector<Point> points_;  // oldest first

  const Point* longest_point(std::span<const int32_t> prompt) const;
  // Keeps the point after `ids`: `taken` (a point taken within a prefill),
  // or nullptr for mark().
  void take_point(std::span<const int32_t> ids, SavePoint* taken = nullptr);
};

}  // namespace k3
