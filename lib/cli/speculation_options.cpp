#include "cli/speculation_options.h"

#include "cli/token_id_reader.h"
#include "common/error.h"
#include "common/file.h"

#include <algorithm>
#include <string>

namespace k3 {

void SpeculationFlags::add_to(CLI::App& app) {
  app.add_option("--spec", spec_,
                 "Speculative decoding: verify up to N drafted ids per weight pass, drafted from earlier text that "
                 "matches the latest ids (output identical to a run without it; default 0: none)")
      ->check(CLI::Range(0, 64));
  app.add_option("--predict", predict_file_,
                 "Ids you expect the output to be (e.g. the previous version of a document): drafts come from them, "
                 "re-aligned after a mismatch (output identical to a run without it; default: none)");
  draft_.add_to(app);
}

void ChatSpeculationFlags::add_to(CLI::App& app) {
  spec_option_ =
      app.add_option("--spec", spec_,
                     "Speculative decoding: verify up to N ids per weight pass, drafted from earlier text of "
                     "the conversation that matches the latest ids; no match, no draft (default " +
                         std::to_string(kDefaultDrafts) +
                         ", fewer when memory is short; the reply is identical to one without it)")
          ->check(CLI::Range(0, 64));
  off_option_ = app.add_flag("--no-spec", off_, "No prompt-lookup drafts (one id per weight pass unless --draft)")
                    ->excludes(spec_option_);
  draft_.add_to(app);
}

bool ChatSpeculationFlags::is_default() const {
  return spec_option_->count() == 0 && off_option_->count() == 0 && !draft_.given();
}

size_t SpeculationFlags::max_drafts() const {
  const size_t own = spec_ > 0 ? spec_ : predict_file_.empty() ? 0 : 8;
  return std::max(own, draft_.max_drafts());
}

std::unique_ptr<DraftSource> SpeculationFlags::make_source(int64_t vocab_size) {
  std::unique_ptr<DraftSource> ngram;
  if (spec_ > 0) ngram = std::make_unique<NgramDrafts>();
  if (predict_file_.empty()) return ngram;
  if (!file_exists(predict_file_)) throw Error(ExitCode::kBadInput, predict_file_ + ": --predict file not found");
  auto predicted = std::make_unique<PredictedDrafts>(
      parse_token_ids(read_input(predict_file_, "--predict file"), predict_file_, vocab_size));
  if (!ngram) return predicted;
  auto chained = std::make_unique<ChainedDrafts>(predicted.get(), ngram.get());
  parts_.push_back(std::move(predicted));
  parts_.push_back(std::move(ngram));
  return chained;
}

}  // namespace k3
