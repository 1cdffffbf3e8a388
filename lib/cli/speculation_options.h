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

}  // namespace k3
