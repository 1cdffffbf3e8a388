// Generated ids -> OpenAI's response objects, in both forms from one place:
// the SSE chunks of a streamed reply and the body of a non-streamed one.
// The non-streamed message is made of the same deltas the chunks carry, so
// the concatenated deltas equal the non-streamed answer by construction.
//
// Chat: the ids go through lib/chat's ReplyParser (SPEC section 5): the
// think channel becomes `reasoning_content`, the response channel `content`
// (cut at the first `stop` string), the tools channel `tool_calls` (OpenAI's
// shape, arguments as a JSON string; streamed once complete, in one delta
// per call). Completions: the ids' text as k3-detok writes it (UTF-8 held
// back across tokens, invalid bytes as U+FFFD); the stop id that ended the
// generation is not part of the text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chat/reply_parser.h"
#include "common/json_value.h"
#include "sampling/logprobs.h"
#include "serve/openai_request.h"
#include "serve/stop_strings.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/vocabulary.h"

namespace k3::serve {

enum class EndReason { kStop, kLength, kCancelled };

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt ids taken from a kept conversation state
};

struct ResponseMeta {
  std::string id;  // "chatcmpl-..." or "cmpl-..."
  int64_t created = 0;
  std::string model;
  int64_t choice = 0;     // the choice's index (n > 1: one writer per choice)
  bool logprobs = false;  // choices carry logprobs (add_logprobs), else "logprobs": null
};

JsonValue usage_json(const Usage& usage);

class ReplyWriter {
 public:
  // `thinking`: the chat prompt opened the think channel (ignored for completions).
  ReplyWriter(Endpoint endpoint, const Vocabulary& vocab, bool thinking, std::vector<std::string> stop,
              ResponseMeta meta, bool include_usage);

  // The chunk that opens a streamed chat reply (the assistant role); none
  // for completions.
  std::vector<std::string> start();
  // One generated id (`stop_id`: the id that ends the generation): the
  // chunks to send now (none while text is held back).
  std::vector<std::string> push(int32_t id, bool stop_id);
  // The log-probabilities of the next id pushed: sent with the next chunk
  // (the finish_reason chunk takes any left), all of them in body().
  void add_logprobs(const PositionLogprobs& p);
  // A stop string was read: the generation can end.
  bool stop_string_matched() const { return stops_.stopped(); }
  // The end: the last text, tool calls, the finish_reason chunk, the usage
  // chunk when asked for, and "data: [DONE]".
  std::vector<std::string> finish(EndReason reason, const Usage& usage);
  // finish() in two parts, for a reply of several choices: the choice's
  // last chunks (up to its finish_reason), then once for the reply the
  // usage chunk and "data: [DONE]".
  std::vector<std::string> finish_choice(EndReason reason);
  std::vector<std::string> close(const Usage& usage) const;
  // The non-streamed body (after every push() and finish()).
  std::string body(const Usage& usage) const;
  // The body of several choices' writers (n > 1), in their order.
  static std::string body(const std::vector<const ReplyWriter*>& choices, const Usage& usage);

  const std::string& content() const { return endpoint_ == Endpoint::kChat ? content_ : text_; }
  const std::optional<ParsedReply>& parsed() const { return parsed_; }

 private:
  std::vector<std::string> deltas(const std::vector<ReplyPiece>& pieces);
  std::string chunk(JsonValue delta_or_text, const char* finish_reason);
  JsonValue choice_json() const;  // the non-streamed body's choice
  // The members every response and chunk opens with (id, object, created,
  // model, choices): `streamed` names a chunk's object, else the body's.
  JsonValue envelope(bool streamed, JsonValue choices) const;
  JsonValue tool_calls_json(bool with_index) const;
  const char* finish_reason() const;

  Endpoint endpoint_;
  const Vocabulary& vocab_;
  bool thinking_;
  ResponseMeta meta_;
  bool include_usage_;
  std::optional<ReplyParser> parser_;
  StreamDecoder decoder_;
  StopStrings stops_;
  std::string reasoning_, content_, text_;
  std::optional<ParsedReply> parsed_;
  EndReason end_ = EndReason::kStop;
  std::vector<PositionLogprobs> logprobs_;  // of every id pushed
  size_t logprobs_sent_ = 0;                // ...in chunks so far
  int64_t text_sent_ = 0;                   // completion bytes of the ids whose logprobs were sent
};

// One server-sent event carrying `json`, and the stream's last event.
std::string sse_event(const std::string& json);
inline const char* sse_done() { return "data: [DONE]\n\n"; }

}  // namespace k3::serve
