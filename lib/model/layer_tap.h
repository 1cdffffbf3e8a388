// What a draft model (or any observer) sees of a forward pass: the output of
// chosen decoder layers, row by row (model/forward_pass.h calls it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/sequence_state.h"

namespace k3 {

// Receives the output of chosen decoder layers for every row of every pass
// (prefill batches, decode steps, verification passes), e.g. the taps a
// draft model reads. The rows are the current AttnRes block's partial sum p
// after layer `layer` has added its attention and MLP outputs, before the
// next layer mixes or pushes a block (SPEC section 2): `rows` [n][hidden] of
// the sequence `state` at positions pos0 .. pos0+n-1, valid during the call.
// Rows of a rejected verification are tapped too; positions are absolute, so
// a later pass at the same positions supersedes them.
class LayerTap {
 public:
  virtual ~LayerTap() = default;
  virtual bool wants(int layer) const = 0;
  virtual void on_layer(int layer, const SequenceState& state, int64_t pos0, const float* rows, size_t n) = 0;
};

}  // namespace k3
