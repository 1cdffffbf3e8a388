// --spec N, --predict FILE and --draft DIR: exact speculative decoding
// (README "Speculative decoding", docs/dspark.md). Declared once for the
// tools that generate.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cli/draft_options.h"
#include "common/tool_main.h"
#include "engine/model.h"
#include "engine/session.h"

namespace k3 {

class SpeculationFlags {
 public:
  void add_to(CLI::App& app);
  // Whether any kind of drafting was asked for.
  bool requested() const { return spec_ > 0 || !predict_file_.empty() || draft_.given(); }
  // Drafts per weight pass (0: off). --predict alone drafts up to 8; --draft
  // counts once draft().check() has read its config.
  size_t max_drafts() const;
  // Reads --draft's config and refuses a draft that does not fit `config`
  // (exit 3); sets the rollback copies (max_drafts()) and the draft's memory
  // the plan counts.
  void check(const ModelConfig& config, RunRequest& stream) {
    draft_.check(config, stream);
    stream.state_snapshots = max_drafts();
  }
  // --draft: the trained draft model, started once the model is loaded; the
  // source below is its fallback.
  DraftFlags& draft() { return draft_; }
  // The draft source for these flags (nullptr when off). Reads and checks the
  // --predict file (kBadInput naming it).
  std::unique_ptr<DraftSource> make_source(int64_t vocab_size);

 private:
  size_t spec_ = 0;
  std::string predict_file_;
  std::vector<std::unique_ptr<DraftSource>> parts_;
  DraftFlags draft_;
};

// k3-chat: prompt lookup on by default (replies often repeat the
// conversation: names, code, quotes). The drafter proposes only on a match
// and shortens its drafts when they fail, so text without repetition reads
// what it would without drafts. --spec N sets the drafts per pass, --no-spec
// (or --spec 0) turns drafting off; the default is lowered, down to off, when
// the memory plan cannot hold its rollback copies (an explicit --spec is
// refused instead).
class ChatSpeculationFlags {
 public:
  static constexpr size_t kDefaultDrafts = 4;
  void add_to(CLI::App& app);
  // Drafts per weight pass asked for (0: off); with --draft at least its
  // block (once check() has read its config).
  size_t max_drafts() const { return std::max(lookup_drafts(), draft_.max_drafts()); }
  // Prompt-lookup drafts per pass (0: --no-spec); with --draft they fill in
  // where the draft model proposes nothing.
  size_t lookup_drafts() const { return off_ ? 0 : spec_; }
  // Neither --spec nor --no-spec (nor --draft) was given.
  bool is_default() const;
  void check(const ModelConfig& config, RunRequest& stream) {
    draft_.check(config, stream);
    stream.state_snapshots = max_drafts();
  }
  DraftFlags& draft() { return draft_; }
  // Starts --draft (when given) over the loaded model, `lookup` filling in
  // where it proposes nothing (unless --no-spec).
  void start_draft(Model& model, Session& session, DraftSource* lookup) {
    draft_.start(model, session, lookup_drafts() ? lookup : nullptr, tool_name());
  }
  // After the chat: --draft's log and summary; returns `status`.
  int finish_draft(int status) {
    draft_.finish(tool_name());
    return status;
  }

 private:
  size_t spec_ = kDefaultDrafts;
  bool off_ = false;
  CLI::Option* spec_option_ = nullptr;
  CLI::Option* off_option_ = nullptr;
  DraftFlags draft_;
};

}  // namespace k3
