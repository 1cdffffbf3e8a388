// k3-chat --tools FILE: OpenAI tool declarations, a JSON array such as
// [{"type": "function", "function": {"name": ..., "description": ...,
// "parameters": {...}}}], rendered into every prompt as a request's "tools".
// A reply that calls a tool shows the call; the next input is the tool's
// result (ChatSession::input_message).
#pragma once

#include <string>

#include "common/json_value.h"

namespace k3 {

// Reads and checks `path`: JSON, a non-empty array, accepted by the chat
// renderer as a request's tools. Error(kBadInput) naming the file otherwise;
// Error(kIo) when it cannot be read.
JsonValue load_tool_declarations(const std::string& path);

}  // namespace k3
