// A sequence's state taken inside a pass (ForwardPass::forward_sequences_last):
// the state and logits the sequence would have had, had the pass ended
// after its first `rows` rows, bit for bit. A server keeps a conversation's
// state at the end of a system prompt that a longer prompt continues; taken
// inside the pass, the prompt runs as one read of the weights instead of
// ending a pass at that point and reading every weight again for the rest.
//
// What that state is (SPEC: nothing else crosses tokens): for each KDA layer
// the recurrent state and conv carries after the row, copied as the pass
// runs the layer (the layer's rows are cut there: forward_pass_chunk.cpp);
// for each MLA layer the latent cache's rows up to it (rows are only
// appended, so a copy of the first ones, a new cache with a generation of
// its own); the positions and tokens up to it.
#pragma once

#include <cstddef>
#include <vector>

#include "model/sequence_state.h"

namespace k3 {

struct StateCapture {
  size_t sequence = 0;  // which of the pass's sequences
  size_t rows = 0;      // 1 .. that sequence's rows in the pass
  // Filled by the pass.
  SequenceState state;
  std::vector<float> logits;  // [vocab]: the logits of the sequence's row `rows` - 1
};

}  // namespace k3
