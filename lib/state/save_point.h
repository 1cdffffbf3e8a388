// A save point of one sequence: everything a generation carries from token
// to token but its counters (the evaluated state, the pending ids, the
// current logits row), to go back to later (a chat's earlier turn, a
// server's cached conversation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/sequence_state.h"

namespace k3 {

struct SavePoint {
  SequenceState state;
  std::vector<int32_t> pending;
  std::vector<float> row;
  bool has_row = false;
  size_t logged_rows = 0;
};

// A save point taken inside a weight pass of several sequences
// (Model::step_rows): sequence `sequence`'s state after the first `ids` of
// the ids the pass gives it (its pending ids evaluated before them), as a
// pass that ended there would leave it, while the pass goes on past it (a
// server keeps a system prompt's state without ending the pass there).
struct SavePointWithin {
  size_t sequence = 0;
  size_t ids = 0;  // 1 .. the sequence's ids in the pass
};

}  // namespace k3
