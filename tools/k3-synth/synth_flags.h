// k3-synth's size flags (--vocab, --hidden, ... --shards): one table of flag,
// help and geometry field, so the flags are declared, applied over the
// preset and noticed as overrides in one place.
#pragma once

#include <CLI/CLI.hpp>
#include <array>

#include "synth/synth_geometry.h"

namespace k3 {

class SynthSizeFlags {
 public:
  struct Flag {
    const char* name;
    const char* help;
    int SynthGeometry::*field;
  };
  static const std::array<Flag, 16> kFlags;

  void add_to(CLI::App& app);
  // Sets the fields whose flag was given (non-zero) over the preset's
  // geometry `g`; --layers also places the MLA layers. A geometry changed
  // here no longer has the preset's published total size.
  void apply(SynthGeometry& g) const;

 private:
  std::array<int, kFlags.size()> values_{};  // 0: not given, the preset's
};

}  // namespace k3
