// --spec N and --predict FILE: exact speculative decoding (README
// "Speculative decoding"). Declared once for the tools that generate.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "generate/draft_source.h"

namespace k3 {

class SpeculationFlags {
 public:
  void add_to(CLI::App& app);
  // Drafts per weight pass (0: off). --predict alone drafts up to 8.
  size_t max_drafts() const;
  // The draft source for these flags (nullptr when off). Reads and checks the
  // --predict file (kBadInput naming it).
  std::unique_ptr<DraftSource> make_source(int64_t vocab_size);

 private:
  size_t spec_ = 0;
  std::string predict_file_;
  std::vector<std::unique_ptr<DraftSource>> parts_;
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
  // Drafts per weight pass asked for (0: off).
  size_t max_drafts() const { return off_ ? 0 : spec_; }
  // Neither --spec nor --no-spec was given.
  bool is_default() const;

 private:
  size_t spec_ = kDefaultDrafts;
  bool off_ = false;
  CLI::Option* spec_option_ = nullptr;
  CLI::Option* off_option_ = nullptr;
};

}  // namespace k3
