// k3-chat's state file: the model state of a conversation kept beside its
// --history (HISTORY.k3s), so a resumed chat evaluates only the new message
// instead of the whole conversation again.
//
// What is saved after each change of the transcript (a turn, /undo, /retry)
// is the state the next turn goes on from (Session::save_reusable): the
// sequence itself, or the save point of an earlier turn. It is a state file
// (state/state_file.h: atomic, exclusive temporary, checksummed, tied to
// the model's fingerprint). On resume it is used only when its ids are a
// prefix of the conversation rendered again; a file of other weights, a
// corrupt or stale one is named in a note and the conversation is
// evaluated again, so the output never depends on it.
#pragma once

#include <cstddef>
#include <string>

#include "chat/chat_session.h"
#include "state/continuation.h"

namespace k3 {

// HISTORY.k3s.
std::string chat_state_path(const std::string& history_path);

// Restores `path` into the chat's session when it continues the transcript.
// Returns the ids restored; 0 with `note` saying why when the file exists but
// is not used (other weights, corrupt, does not match the history, longer
// than the context). A missing file is no note.
size_t load_chat_state(ChatSession& chat, const std::string& path, const ModelIdentity& identity, std::string& note);

// Writes the state the next turn goes on from, or removes `path` when there
// is none (e.g. after /reset). Never writes through a symbolic link or into
// a device (Error(kIo) naming the file).
void save_chat_state(ChatSession& chat, const std::string& path, const ModelIdentity& identity);

}  // namespace k3
