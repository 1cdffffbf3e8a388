// Anthropic's conversation shape -> the OpenAI-style chat request lib/chat
// reads (chat_request.h), so /v1/messages renders through the same XTML
// renderer as /v1/chat/completions and the same conversation gives the same
// prompt ids (SPEC section 5) on both routes:
//   system (a string or text blocks)          -> a system message
//   user text blocks                          -> a user message
//   user tool_result blocks                   -> tool messages (tool_call_id),
//     before the user's text; is_error: true puts "Error: " before the result
//   assistant thinking blocks                 -> reasoning_content
//   assistant text blocks                     -> content parts
//   assistant tool_use blocks                 -> tool_calls (input as the arguments)
//   tools [{name, description, input_schema}] -> [{type: function, function:
//     {name, description, parameters}}]
//   tool_choice auto / any / tool / none      -> auto / required / a named
//     function / none
// Every refusal is an ApiError(400) whose message starts with the field,
// e.g. "messages[1].content[0].type: ..."; a field or block this front does
// not implement is refused by name, never ignored (cache_control, a caching
// hint, is the exception: k3 keeps every conversation's state anyway).
#pragma once

#include "common/json_value.h"

namespace k3::serve {

// The chat request JSON (messages, tools, tool_choice) of an Anthropic body;
// thinking controls are added by the caller.
JsonValue anthropic_chat_json(const JsonValue& body);

}  // namespace k3::serve
