// Errors about a --history file name its line: the transcript checks speak
// of "messages[N]" (the N-th message, counted from 0, as in a request),
// while the file is read line by line and blank lines are skipped.
#pragma once

#include <string>
#include <vector>

#include "common/json_value.h"

namespace k3 {

// load_chat_history() and check_chat_messages() (chat_session.h) of a
// --history file, a refusal naming the file and line.
std::vector<JsonValue> load_checked_history(const std::string& path);

// `message` with its first "messages[N]" (optionally preceded by
// "request: ") replaced by "line L" of `path`, L being the line that holds
// message N ("messages[1].role: x" becomes "line 2: role: x"); `message`
// unchanged when it names no message or the file cannot be read.
std::string name_history_line(const std::string& path, const std::string& message);

}  // namespace k3
