// The sampling flags of tools that generate (--temp --top-k --top-p --min-p
// --seed, the penalties): declared once; only the flags actually given
// override a saved conversation's settings (state/continuation.h
// resolve_sampling). Values are checked while the command line is parsed,
// before any input is read.
#pragma once

#include <CLI/CLI.hpp>

#include "sampling/sampler.h"
#include "state/continuation.h"

namespace k3 {

class SamplingFlags {
 public:
  void add_to(CLI::App& app);
  // The flags that were given on the command line (call after parsing).
  SamplingOverrides given() const;

 private:
  SamplingParams values_;
  PenaltyParams penalties_;
  CLI::Option *temp_ = nullptr, *top_k_ = nullptr, *top_p_ = nullptr, *min_p_ = nullptr, *seed_ = nullptr;
  CLI::Option *repetition_ = nullptr, *frequency_ = nullptr, *presence_ = nullptr, *last_n_ = nullptr;
};

}  // namespace k3
