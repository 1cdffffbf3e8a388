// Generated ids -> Anthropic's Message, in both forms from one place: the
// server-sent events of a streamed reply (message_start, ping, then per
// content block content_block_start / content_block_delta / content_block_stop,
// message_delta with the stop_reason and usage, message_stop) and the body
// of a non-streamed one, built from the same blocks, so the streamed deltas
// concatenate to the non-streamed content by construction.
//
// The ids go through lib/chat's ReplyParser (SPEC section 5), as for
// /v1/chat/completions: the think channel becomes a thinking block (its
// signature "k3:unsigned": k3 does not sign, and what comes back is not
// checked), the response channel a text block (cut at the first stop
// sequence), each tool call a tool_use block whose input is the call's
// arguments (sent in one input_json_delta once the call is complete). A
// block is opened by its first text; empty channels give no block.
// stop_reason: stop_sequence (stop_sequence names it), max_tokens, tool_use,
// else end_turn.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chat/reply_parser.h"
#include "common/json_value.h"
#include "serve/openai_response.h"
#include "serve/stop_strings.h"
#include "tokenizer/vocabulary.h"

namespace k3::serve {

// Anthropic's usage: input_tokens are the prompt's ids not continued from a
// kept state, cache_read_input_tokens those that were.
JsonValue anthropic_usage_json(const Usage& usage);

// An error as Anthropic's API reports it: {"type": "error", "error": {"type": ..., "message": ...}}.
const char* anthropic_error_type(int status);
JsonValue anthropic_error_json(int status, const std::string& message);
std::string anthropic_error_body(int status, const std::string& message);

class MessageWriter {
 public:
  MessageWriter(const Vocabulary& vocab, bool thinking, std::vector<std::string> stop_sequences, std::string id,
                std::string model);

  // message_start (with the usage known so far) and a ping.
  std::vector<std::string> start(const Usage& usage);
  // One generated id: the events to send now.
  std::vector<std::string> push(int32_t id);
  bool stop_sequence_matched() const { return stops_.stopped(); }
  // The end: the last text, the tool_use blocks, message_delta and message_stop.
  std::vector<std::string> finish(EndReason reason, const Usage& usage);
  // The non-streamed body (after every push() and finish()).
  std::string body(const Usage& usage) const;

 private:
  struct Block {
    std::string type;  // thinking, text or tool_use
    std::string text;  // thinking or text
    std::string id, name;
    JsonValue input;
  };
  // Appends `text` to the open block of `type`, opening it (and closing the one before) first.
  void append(const std::string& type, const std::string& text, std::vector<std::string>& out);
  void close_block(std::vector<std::string>& out);
  JsonValue block_json(const Block& b, bool opening) const;
  const char* stop_reason() const;

  std::string id_, model_;
  ReplyParser parser_;
  StopStrings stops_;
  std::vector<Block> blocks_;
  bool open_ = false;  // blocks_.back() is open on the stream
  std::optional<ParsedReply> parsed_;
  EndReason end_ = EndReason::kStop;
};

// One named server-sent event: "event: NAME\ndata: JSON\n\n".
std::string sse_named_event(const std::string& name, const JsonValue& data);

}  // namespace k3::serve
