// The tensors k3-pack packs for a synthetic geometry: the text model's,
// the vision tower left out (for the tiny geometry, the fixture's list; see
// synth_checkpoint_test).
#pragma once

#include <vector>

#include "synth/synth_checkpoint.h"

namespace k3::test {

inline std::vector<ExpectedTensor> manifest_of(const SynthGeometry& g) {
  std::vector<ExpectedTensor> m;
  for (const SynthTensor& s : synth_tensors(g))
    if (!s.vision) m.push_back(s.t);
  return m;
}

inline std::vector<ExpectedTensor> tiny_manifest() {
  SynthGeometry g;
  synth_preset("tiny-like", &g);
  return manifest_of(g);
}

}  // namespace k3::test
