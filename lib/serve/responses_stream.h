// A streamed /v1/responses reply, token by token: the chunks of the chat
// completion stream the request amounts to (completion_route.h) turned, as
// they come, into the Responses API's semantic events:
//   response.created, response.in_progress;
//   a reasoning item (thinking): response.output_item.added,
//     response.reasoning_summary_part.added,
//     response.reasoning_summary_text.delta per chunk, .._text.done,
//     response.reasoning_summary_part.done, response.output_item.done;
//   a message item: response.output_item.added, response.content_part.added,
//     response.output_text.delta per chunk, response.output_text.done,
//     response.content_part.done, response.output_item.done;
//   a function_call item per tool call: response.output_item.added,
//     response.function_call_arguments.delta/.done, response.output_item.done;
//   response.completed (or response.incomplete when cut by max_output_tokens).
// The final response object is response_from_chat() of the chat reply the
// chunks add up to: the one a non-streamed request gets. An error chunk
// becomes an "error" event.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/json_value.h"
#include "serve/response_extras.h"

namespace k3::serve {

// Pieces of the Responses API's JSON that the stream and the whole reply
// (responses_route.cpp) both read or build.
// obj's member `key`; a null value where obj has none (or is not an object).
const JsonValue& json_member(const JsonValue& obj, const char* key);
// v's text where it is a string, else "".
std::string json_text(const JsonValue& v);
// A message's output_text content part.
JsonValue output_text(const std::string& text);

class ResponsesStream {
 public:
  ResponsesStream(std::string previous_response_id, bool store, ResponseExtras extras = {})
      : previous_response_id_(std::move(previous_response_id)), store_(store), extras_(std::move(extras)) {}

  // Bytes of the chat stream (SSE, any split): the Responses events they complete.
  std::string push(std::string_view chat_sse);
  // The chat reply the chunks added up to (a chat.completion body), once
  // the chat stream ended without an error; null before.
  const JsonValue& chat() const { return chat_; }
  bool failed() const { return failed_; }

 private:
  std::string event(const char* type, JsonValue fields);
  std::string on_chunk(const JsonValue& chunk);
  std::string open_item(JsonValue item);
  std::string close_reasoning();
  std::string close_message();
  std::string finish();
  JsonValue at() const;  // item_id and output_index of the open item

  std::string previous_response_id_;
  bool store_;
  ResponseExtras extras_;
  std::string pending_;  // an incomplete SSE event
  int64_t sequence_ = 0;
  bool started_ = false, failed_ = false, ended_ = false;
  std::string id_;     // the chat id without "chatcmpl-"
  JsonValue first_;    // the first chunk (id, created, model)
  int64_t items_ = 0;  // output items opened
  std::string open_id_;
  enum class Open { kNone, kReasoning, kMessage } open_ = Open::kNone;
  std::string reasoning_, content_, finish_reason_;
  bool message_done_ = false;  // a message item was opened (and closed)
  JsonValue tool_calls_ = JsonValue::array();
  JsonValue usage_;
  JsonValue chat_;
};

}  // namespace k3::serve
