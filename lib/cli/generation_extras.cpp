#include "cli/generation_extras.h"

#include "cli/flag_checks.h"
#include "common/atomic_file_writer.h"
#include "common/error.h"
#include "common/file.h"
#include "constrain/json_schema_compiler.h"
#include "sampling/logprobs.h"

namespace k3 {

void GenerationExtras::add_to(CLI::App& app) {
  app.add_option("--stop", stops_,
                 "Stop generating where the text of the generated ids first contains TEXT (repeatable; matched "
                 "across token boundaries on the decoded text): the ids of the stop text, and the id it begins "
                 "in, are not written (default: none)")
      ->allow_extra_args(false);
  app.add_option("--logprobs", logprobs_n_,
                 "Write each generated id's log-probability and the N most likely ids' to --logprobs-file "
                 "(JSON lines; the model's distribution before sampling settings; default 0: none written)")
      ->check(CLI::Range(0, 20));
  app.add_option("--logprobs-file", logprobs_file_, "Where --logprobs writes (written atomically; default: none)");
  app.add_option("--json-schema", json_schema_file_,
                 "Structured output: the generated text is one JSON value that this JSON schema accepts (the "
                 "sampler masks every id that could not continue one), then a stop id; '-' reads stdin. A keyword "
                 "it does not enforce is refused (exit 4), see docs/structured-output.md (default: none: free text)");
}

void GenerationExtras::prepare(const std::string& tok_dir, bool batch) {
  if (batch && (!stops_.empty() || logprobs_n_ > 0 || !logprobs_file_.empty() || !json_schema_file_.empty()))
    throw Error(ExitCode::kUsage, "--stop, --logprobs and --json-schema apply to one prompt: drop them or --batch");
  if (!json_schema_file_.empty()) {
    // '-', a pipe or <(...) are read to the end as every file argument; the compiler refuses over 1 MiB.
    const std::string text = read_input(json_schema_file_, "JSON schema");
    try {
      grammar_ = std::make_shared<JsonGrammar>(compile_json_schema_text(text));
    } catch (const Error& e) {
      throw Error(e.code(), "--json-schema " + json_schema_file_ + ": " + e.what());
    }
    if (!vocab_) vocab_.emplace(Vocabulary::load(tok_dir));
    trie_ = std::make_unique<VocabularyTrie>(VocabularyTrie::from_vocabulary(*vocab_));
  }
  if (!logprobs_file_.empty()) check_output_path(logprobs_file_, OutputPolicy::kFileOrStream);
  if (logprobs_n_ > 0 && logprobs_file_.empty())
    throw Error(ExitCode::kUsage, "--logprobs N writes to a file: add --logprobs-file FILE");
  if (stops_.empty()) return;
  ids_.emplace(stops_);  // refuses an empty stop text
  if (!vocab_) vocab_.emplace(Vocabulary::load(tok_dir));
}

void GenerationExtras::attach(Session& session, int64_t vocab) {
  if (grammar_) {
    constraint_ = std::make_unique<OutputConstraint>(
        std::vector<ConstraintStep>{ConstraintStep::json(grammar_),
                                    ConstraintStep::end(session.stop_conditions().ids())},
        *trie_);
    session.set_constraint(constraint_.get());
  }
  if (logprobs_file_.empty()) return;
  session.set_sample_observer([this, vocab](int32_t id, const float* row, int64_t position) {
    logprobs_ += logprobs_json_line(logprobs_at(row, vocab, id, logprobs_n_, position));
  });
}

std::vector<int32_t> GenerationExtras::filter(int32_t id) {
  if (!ids_) return {id};
  return ids_->push(id, vocab_->bytes(static_cast<TokenId>(id)));
}

std::vector<int32_t> GenerationExtras::finish() { return ids_ ? ids_->finish() : std::vector<int32_t>{}; }

void GenerationExtras::write_logprobs() const {
  if (!logprobs_file_.empty())
    write_file_atomic(logprobs_file_, logprobs_.data(), logprobs_.size(), OutputPolicy::kFileOrStream);
}

}  // namespace k3
