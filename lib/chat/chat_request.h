// An OpenAI-style chat request, checked and in the shape the XTML renderer
// needs (SPEC section 5). Parsing refuses what the reference encoder would
// refuse or could only get wrong, with an Error(kBadInput) whose message
// starts with the field path, e.g. "messages[2].role: ...".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_value.h"

namespace k3 {

struct ToolCall {
  std::string id;
  std::string name;
  // Arguments as a JSON object (its own key order), or, when the request
  // carried a string that is not valid JSON, that raw string.
  bool raw = false;
  JsonValue arguments;        // !raw: an object
  std::string raw_arguments;  // raw
};

struct ChatMessage {
  std::string role;  // system, user, assistant or tool
  std::optional<std::string> name;
  std::vector<std::string> content;  // text parts, in order (a string is one part)
  std::optional<std::string> reasoning_content;
  std::vector<ToolCall> tool_calls;         // assistant
  std::optional<std::string> tool_call_id;  // tool
  std::optional<std::string> tool;          // tool: the tool's name (`tool`, else `name`)
  std::optional<JsonValue> tools;           // system: a dynamic tool declaration (non-empty array)
};

enum class ResponseFormat { kText, kJsonObject, kJsonSchema };

struct ChatRequest {
  std::vector<ChatMessage> messages;
  std::optional<JsonValue> tools;  // non-empty array
  bool thinking = true;
  std::optional<std::string> effort = std::string("max");  // nullopt: no effort note
  std::string tool_choice;                                 // "", "auto", "required", "none" or "function"
  std::string tool_choice_name;                            // "function": the function's name
  ResponseFormat response_format = ResponseFormat::kText;
  JsonValue response_schema;  // kJsonSchema
  bool add_generation_prompt = true;
};

// The thinking efforts the reference accepts.
bool is_supported_effort(std::string_view effort);

ChatRequest parse_chat_request(const JsonValue& request);
// Parses the JSON text first (Error(kBadInput) when it is not JSON).
ChatRequest parse_chat_request(std::string_view json_text);

// One message back as OpenAI-style JSON (what a history file stores and
// what `--json` prints for a parsed reply).
JsonValue chat_message_json(const ChatMessage& message);

}  // namespace k3
