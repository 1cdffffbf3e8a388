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

}  // namespace k3
