// k3-forward's controls over what --gen writes, beyond the sampler: stop
// strings (--stop TEXT, sampling/stop_strings.h: matched on the ids' text,
// the stop text not written) and per-token logprobs (--logprobs N
// --logprobs-file FILE, sampling/logprobs.h: one JSON line per generated id)
// and structured output (--json-schema FILE, constrain/: the generated text
// is one JSON value the schema accepts, then a stop id).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "constrain/json_grammar.h"
#include "constrain/output_constraint.h"
#include "constrain/vocabulary_trie.h"
#include "engine/session.h"
#include "sampling/stop_strings.h"
#include "tokenizer/vocabulary.h"

namespace k3 {

class GenerationExtras {
 public:
  void add_to(CLI::App& app);
  // Checks the flags and opens what they need (the tokenizer of `tok_dir`
  // for --stop; the --logprobs-file, checked as an output); before any
  // weight is read. Throws Error(kUsage) for --logprobs without a file, and
  // for either flag with --batch (`batch`), which does not apply them.
  void prepare(const std::string& tok_dir, bool batch);
  // The tokenizer prepare() opened (--stop, --json-schema turn ids into text); nullptr: none.
  const Vocabulary* vocabulary() const { return vocab_ ? &*vocab_ : nullptr; }

  // Hooks the session for logprobs (`vocab`: the row length) and the
  // --json-schema constraint (ending at the session's stop ids). Call before
  // generating.
  void attach(Session& session, int64_t vocab);
  // The id generated: returns the ids that can be written now.
  std::vector<int32_t> filter(int32_t id);
  // The ids held back when generation ended without a stop string.
  std::vector<int32_t> finish();
  // Whether a stop string ended the text.
  bool stopped() const { return ids_ && ids_->stopped(); }
  // Writes the logprobs file (atomically) if asked for.
  void write_logprobs() const;

 private:
  std::vector<std::string> stops_;
  int logprobs_n_ = 0;
  std::string logprobs_file_;
  std::optional<Vocabulary> vocab_;
  std::optional<StopStringIds> ids_;
  std::string logprobs_;
  std::string json_schema_file_;
  std::shared_ptr<const JsonGrammar> grammar_;
  std::unique_ptr<VocabularyTrie> trie_;  // over *vocab_
  std::unique_ptr<OutputConstraint> constraint_;
};

}  // namespace k3
