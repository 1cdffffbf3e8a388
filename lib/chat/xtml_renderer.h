// The chat prompt of K3's encoder (encoding_k3.py), SPEC section 5: a
// checked ChatRequest -> XTML segments -> token ids.
#pragma once

#include <vector>

#include "chat/chat_request.h"
#include "chat/xtml_segments.h"
#include "tokenizer/tokenizer.h"

namespace k3 {

struct RenderedChat {
  std::vector<Segment> segments;
  // Segments of the system prompt and tool list: the leading notes (tool
  // declarations, thinking effort) and system messages, up to the first
  // message of another role. A new conversation with the same system prompt
  // and tools starts with them (0: the chat has none).
  size_t system_segments = 0;
  // Segments before the trailing notes (tool_choice, response_format) and
  // the generation prompt: the part a later request of the same
  // conversation starts with unchanged.
  size_t prefix_segments = 0;
  // Where the generation prompt starts (== prefix_segments without trailing
  // notes: then the whole prompt starts the next request too, since a reply
  // re-renders beginning with the same open tags).
  size_t generation_prompt_segment = 0;
};

// Throws Error(kBadInput) naming the message for what the request shape
// cannot say (a tool message with no name and no call to take it from).
RenderedChat render_chat(const ChatRequest& request);

struct ChatPrompt {
  std::vector<TokenId> ids;
  size_t system_ids = 0;        // ids of RenderedChat::system_segments
  size_t prefix_ids = 0;        // ids of RenderedChat::prefix_segments
  bool trailing_notes = false;  // tool_choice / response_format notes follow the prefix
};
ChatPrompt encode_chat(const Tokenizer& tok, const RenderedChat& rendered);

// The argument TYPE attribute and value text of a tool-call argument.
const char* argument_type(const JsonValue& value);
std::string argument_text(const JsonValue& value);

}  // namespace k3
