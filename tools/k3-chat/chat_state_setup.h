// k3-chat's state file beside --history (chat/chat_state.h), from the tool's
// side: whether it is kept, restoring it at start, and the per-turn "chat"
// figures of --stats-json.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "chat/chat_loop.h"
#include "checkpoint/checkpoint.h"
#include "model/config.h"
#include "state/continuation.h"

namespace k3 {

// Shards a download manifest does not vouch for are read whole to
// fingerprint the model (state/model_fingerprint.h); past this many bytes a
// chat does not keep a state file (at K3 size that read would take minutes
// at every start) and says so.
inline constexpr uint64_t kChatFingerprintReadLimit = 4ull << 30;

// The identity a chat state file is checked against, or nullopt (with a
// note on stderr naming what to do) when knowing it would read more than
// kChatFingerprintReadLimit.
std::optional<ModelIdentity> chat_state_identity(const ModelConfig& config, const Checkpoint& checkpoint);

// Restores HISTORY.k3s into `chat` when it continues the transcript (a note
// on stderr when it exists but is not used) and has the loop keep it.
void resume_chat_state(ChatSession& chat, ChatLoopOptions& loop, const std::string& history_path,
                       const ModelIdentity& identity);

// The "chat" member of --stats-json: the last turn's reused and prefilled
// ids, and every turn's.
std::string chat_stats_json(const std::vector<TurnIds>& turns);

}  // namespace k3
