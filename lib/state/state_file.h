// Layer state: a sequence's state saved to and restored from files.
//
// State files: a conversation saved by `k3-forward --state-out` and continued
// by `--state-in` (format: docs/state-format.md).
//
// Writing is atomic (temporary file + fsync + rename): a failed or interrupted
// write leaves any previous file untouched. Reading checks, in this order,
// and refuses with a one-line message that starts with the file name:
//   exit 4 (kBadInput)  missing/unreadable file, not a state file (magic),
//                       another format version or unknown flags, truncated
//                       or extended file, checksum mismatch, malformed section
//   exit 3 (kBadModel)  saved for a model of another geometry, or for another
//                       model (fingerprint mismatch)
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/sequence_state.h"
#include "sampling/sampler.h"
#include "state/model_fingerprint.h"
#include "state/state_geometry.h"

namespace k3 {

// A run saves at most the last id it generated unevaluated (README
// "Conversations"); a file holding more pending ids is refused (exit 4).
inline constexpr size_t kMaxPendingIds = 1;

struct ConversationState {
  ModelFingerprint model;
  StateGeometry geometry;
  // Evaluated tokens: their ids, count and per-layer state. Layer vectors may
  // be left empty for a layer that never ran; they are written as zeros.
  SequenceState sequence;
  // Ids already emitted (the last generated token) that the model has not
  // evaluated yet; a continuation evaluates them before its new input. At
  // most kMaxPendingIds.
  std::vector<int32_t> pending;
  // Sampler settings to continue with (absent: greedy, no penalties; PENA: penalties).
  std::optional<SamplingParams> sampling;
  // Logits of the last evaluated position, or empty. They let a continuation
  // with no pending ids and no new input still generate.
  std::vector<float> last_logits;
};

// The parts of a state file by reference: a state that stays where it is
// while it is written (a server's kept state, shared with the requests that
// continue from it) is neither copied nor taken. `last_logits` as in
// ConversationState (empty: none).
struct ConversationStateRef {
  const ModelFingerprint& model;
  const StateGeometry& geometry;
  const SequenceState& sequence;
  const std::vector<int32_t>& pending;
  const std::optional<SamplingParams>& sampling;
  const std::vector<float>& last_logits;
};

// Throws k3::Error(kIo) on a write failure, kInternal when `state` does not
// match its own geometry.
void write_state_file(const std::string& path, const ConversationState& state);
void write_state_file(const std::string& path, const ConversationStateRef& state);

// Reads and checks a state file against the model it is to continue with.
ConversationState read_state_file(const std::string& path, const ModelFingerprint& model,
                                  const StateGeometry& geometry);

}  // namespace k3
