// A conversation state the cache spilled to --cache-dir, read back only when
// it is the one the cache wrote there. The directory is the user's: its file
// can be replaced (by another k3-serve, another conversation's state, a
// copy), and a state continued as if it were the request's own would answer
// another conversation. So, as k3-chat's HISTORY.k3s is checked against its
// history, the file must hold this model's state (load_conversation: the
// fingerprint and geometry) and exactly the ids the cache keyed it by
// (evaluated, then pending); anything else is no state, and the request is
// evaluated from scratch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "state/continuation.h"

namespace k3::serve {

// The state in `path` when it belongs to `model` and holds exactly `ids`;
// nullopt when the file cannot be read, is not a state file, is another
// model's, or holds other ids. Throws only what is not k3::Error (a bug).
std::optional<ConversationState> read_kept_state(const std::string& path, const ModelIdentity& model,
                                                 const std::vector<int32_t>& ids);

}  // namespace k3::serve
