// The sequence state lent to a layer-major chunk, as the memory plan counts
// it (RunRequest::lend_state, model/state_loan.h): what leaves memory while
// a chunk runs, the scratch file's size, and the bytes a prompt moves
// through that file.
#pragma once

#include <cstdint>
#include <string>

#include "model/config.h"
#include "planning/memory_plan.h"
#include "planning/run_request.h"

namespace k3 {

// One sequence's state of one layer: a KDA layer's recurrent state and conv
// carries, or an MLA layer's latent rows at `positions` (StateLoan's units).
uint64_t kda_layer_state_bytes(const ModelConfig& config);
uint64_t mla_layer_cache_bytes(const ModelConfig& config, uint64_t positions);

// Sets plan.state_lent_bytes and plan.state_loan_file_bytes where req asks
// to lend the state, the trunk is packed (the file's place) and the chunk is
// longer than the batch (after the chunk is planned; before
// prefill_decode_peak): the sequences' KDA states and MLA caches at the
// context and the stop copies, less one layer's (the largest) a sequence.
void plan_state_loan(const ModelConfig& config, const RunRequest& req, MemoryPlan& plan);

// --plan's line for it ("" when the plan does not lend the state).
std::string describe_state_loan(const MemoryPlan& plan);

// The bytes one prompt's sequence writes to the file and reads back over a
// prompt of `tokens` (from position 0) in chunks of `chunk` rows, those of at
// most `batch` rows not lent: per lent chunk starting at position P with r
// rows, written: every layer's state before it (KDA states, P MLA rows a
// layer) and then each layer's change (its KDA state again, r new MLA rows);
// read: each layer's state before it as the layer comes, then the state after
// it (P + r MLA rows a layer).
struct StateLoanBytes {
  double written = 0, read = 0;
};
StateLoanBytes state_loan_bytes(const ModelConfig& config, uint64_t tokens, uint64_t chunk, uint64_t batch);

}  // namespace k3
