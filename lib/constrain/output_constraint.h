// Structured output: which ids may come next in a generated reply, as a
// program of steps the reply goes through in order. The generation session
// (generate/generation_session.h) asks allowed() before every id it chooses
// (sampled, greedy or verifying a draft) and accept()s the id it keeps, so
// the reply always follows the program; a drafted id outside the mask is
// never chosen, so speculation still gives the ids a run without it gives.
//
// Steps:
//   free    any id but `forbidden` (e.g. K3's thinking section, which is not
//           constrained, but may not end the turn); the id `until` ends it
//   forced  one of `sequences` of ids, id by id (chat markup around the answer);
//           with `branches`, the program goes on with branches[i] once
//           sequence i is read (a tool's name, then its arguments' schema)
//   json    a JSON value of `grammar`, in text ids; once the value is
//           complete, the next step's first ids are allowed too
//   end     one of `ids` (the stop ids); with none, the output ends once the
//           previous step is complete and nothing can continue it
//
// Fails closed: an accept() of an id allowed() did not allow, or a state
// that allows nothing, is an Error (never unconstrained text).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "constrain/json_grammar.h"
#include "constrain/json_token_state.h"
#include "constrain/vocabulary_trie.h"
#include "sampling/token_mask.h"

namespace k3 {

struct ConstraintStep {
  enum class Kind { kFree, kForced, kJson, kEnd };
  Kind kind = Kind::kEnd;
  std::vector<int32_t> forbidden;                     // kFree
  int32_t until = -1;                                 // kFree
  std::vector<std::vector<int32_t>> sequences;        // kForced (each non-empty)
  std::vector<std::vector<ConstraintStep>> branches;  // kForced: empty, or one program per sequence
  std::shared_ptr<const JsonGrammar> grammar;         // kJson
  std::vector<int32_t> ids;                           // kEnd

  static ConstraintStep free(std::vector<int32_t> forbidden, int32_t until);
  static ConstraintStep forced(std::vector<std::vector<int32_t>> sequences,
                               std::vector<std::vector<ConstraintStep>> branches = {});
  static ConstraintStep json(std::shared_ptr<const JsonGrammar> grammar);
  static ConstraintStep end(std::vector<int32_t> ids);
};

// What the masks cost (--stats-json, /metrics).
struct ConstraintStats {
  int64_t masks = 0;        // masks computed
  double mask_seconds = 0;  // their total time
  double max_mask_seconds = 0;
};

class OutputConstraint {
 public:
  // `vocab` must outlive the constraint. Throws kInternal for an empty program.
  OutputConstraint(std::vector<ConstraintStep> steps, const VocabularyTrie& vocab);

  // The ids that may come next (computed once per state).
  const TokenMask& allowed();
  // Keeps `id` (kInternal when it was not allowed).
  void accept(int32_t id);
  // Whether the output is over: the last step is done (an end step with no
  // ids after a complete value that nothing can continue, or past the end).
  bool finished();
  const ConstraintStats& stats() const { return stats_; }

 private:
  void compute();
  void enter(size_t step);
  // The first ids of step `s` (for a json step before it: what may follow the value).
  void add_first_ids(size_t s, TokenMask& mask) const;

  std::vector<ConstraintStep> steps_;
  const VocabularyTrie& vocab_;
  size_t step_ = 0;
  size_t forced_at_ = 0;      // kForced: ids read of the sequences
  std::vector<size_t> live_;  // kForced: sequences still matching
  std::optional<JsonTokenState> json_;
  bool ended_ = false;
  TokenMask mask_;
  bool mask_valid_ = false;
  ConstraintStats stats_;
};

}  // namespace k3
