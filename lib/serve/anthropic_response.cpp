#include "serve/anthropic_response.h"

#include "serve/json_build.h"

namespace k3::serve {

namespace {

constexpr const char* kSignature = "k3:unsigned";

const char* block_type(ReplyChannel channel) { return channel == ReplyChannel::kThink ? "thinking" : "text"; }

// Arguments K3 wrote as one JSON text (a forced call's, under the
// constraint): that object is the input; text that is not a JSON object is
// kept as a string, for the tool to refuse.
JsonValue raw_input(const std::string& text) {
  JsonValue parsed;
  std::string error;
  if (parse_json(text, parsed, error) && parsed.is_object()) return parsed;
  return JsonValue::object().set("raw_arguments", JsonValue::string(text));
}

}  // namespace

std::string sse_named_event(const std::string& name, const JsonValue& data) {
  return "event: " + name + "\ndata: " + write_json(data) + "\n\n";
}

JsonValue anthropic_usage_json(const Usage& u) {
  JsonValue out = JsonValue::object();
  out.set("input_tokens", json_int(u.prompt_tokens - u.cached_tokens));
  out.set("cache_creation_input_tokens", json_int(0));
  out.set("cache_read_input_tokens", json_int(u.cached_tokens));
  out.set("output_tokens", json_int(u.completion_tokens));
  return out;
}

const char* anthropic_error_type(int status) {
  if (status == 401) return "authentication_error";
  if (status == 403) return "permission_error";
  if (status == 404) return "not_found_error";
  if (status == 413) return "request_too_large";
  if (status == 429) return "rate_limit_error";
  if (status == 503 || status == 529) return "overloaded_error";
  if (status >= 500) return "api_error";
  return "invalid_request_error";
}

JsonValue anthropic_error_json(int status, const std::string& message) {
  JsonValue error = JsonValue::object();
  error.set("type", JsonValue::string(anthropic_error_type(status)));
  error.set("message", JsonValue::string(message));
  JsonValue body = JsonValue::object();
  body.set("type", JsonValue::string("error"));
  body.set("error", std::move(error));
  return body;
}

std::string anthropic_error_body(int status, const std::string& message) {
  return write_json(anthropic_error_json(status, message));
}

MessageWriter::MessageWriter(const Vocabulary& vocab, bool thinking, std::vector<std::string> stop_sequences,
                             std::string id, std::string model)
    : id_(std::move(id)), model_(std::move(model)), parser_(vocab, thinking), stops_(std::move(stop_sequences)) {}

JsonValue MessageWriter::block_json(const Block& b, bool opening) const {
  JsonValue out = JsonValue::object();
  out.set("type", JsonValue::string(b.type));
  if (b.type == "thinking") {
    out.set("thinking", JsonValue::string(opening ? "" : b.text));
    out.set("signature", JsonValue::string(opening ? "" : kSignature));
  } else if (b.type == "text") {
    out.set("text", JsonValue::string(opening ? "" : b.text));
  } else {
    out.set("id", JsonValue::string(b.id));
    out.set("name", JsonValue::string(b.name));
    out.set("input", opening ? JsonValue::object() : b.input);
  }
  return out;
}

std::vector<std::string> MessageWriter::start(const Usage& usage) {
  JsonValue message = JsonValue::object();
  message.set("id", JsonValue::string(id_));
  message.set("type", JsonValue::string("message"));
  message.set("role", JsonValue::string("assistant"));
  message.set("model", JsonValue::string(model_));
  message.set("content", json_array());
  message.set("stop_reason", JsonValue());
  message.set("stop_sequence", JsonValue());
  message.set("usage", anthropic_usage_json(usage));
  JsonValue event = JsonValue::object();
  event.set("type", JsonValue::string("message_start"));
  event.set("message", std::move(message));
  return {sse_named_event("message_start", event),
          sse_named_event("ping", JsonValue::object().set("type", JsonValue::string("ping")))};
}

void MessageWriter::close_block(std::vector<std::string>& out) {
  if (!open_) return;
  open_ = false;
  const int64_t index = static_cast<int64_t>(blocks_.size()) - 1;
  if (blocks_.back().type == "thinking") {
    JsonValue delta = JsonValue::object();
    delta.set("type", JsonValue::string("signature_delta"));
    delta.set("signature", JsonValue::string(kSignature));
    JsonValue e = JsonValue::object();
    e.set("type", JsonValue::string("content_block_delta"));
    e.set("index", json_int(index));
    e.set("delta", std::move(delta));
    out.push_back(sse_named_event("content_block_delta", e));
  }
  JsonValue e = JsonValue::object();
  e.set("type", JsonValue::string("content_block_stop"));
  e.set("index", json_int(index));
  out.push_back(sse_named_event("content_block_stop", e));
}

void MessageWriter::append(const std::string& type, const std::string& text, std::vector<std::string>& out) {
  if (text.empty()) return;
  if (!open_ || blocks_.back().type != type) {
    close_block(out);
    blocks_.push_back(Block{type, "", "", "", JsonValue()});
    open_ = true;
    JsonValue e = JsonValue::object();
    e.set("type", JsonValue::string("content_block_start"));
    e.set("index", json_int(static_cast<int64_t>(blocks_.size()) - 1));
    e.set("content_block", block_json(blocks_.back(), true));
    out.push_back(sse_named_event("content_block_start", e));
  }
  blocks_.back().text += text;
  const bool thinking = type == "thinking";
  JsonValue delta = JsonValue::object();
  delta.set("type", JsonValue::string(thinking ? "thinking_delta" : "text_delta"));
  delta.set(thinking ? "thinking" : "text", JsonValue::string(text));
  JsonValue e = JsonValue::object();
  e.set("type", JsonValue::string("content_block_delta"));
  e.set("index", json_int(static_cast<int64_t>(blocks_.size()) - 1));
  e.set("delta", std::move(delta));
  out.push_back(sse_named_event("content_block_delta", e));
}

std::vector<std::string> MessageWriter::push(int32_t id) {
  std::vector<std::string> out;
  if (stops_.stopped()) return out;
  std::vector<ReplyPiece> pieces;
  parser_.push(static_cast<TokenId>(id), pieces);
  for (const ReplyPiece& p : pieces) {
    if (p.channel == ReplyChannel::kThink) append(block_type(p.channel), p.text, out);
    if (p.channel == ReplyChannel::kResponse) append(block_type(p.channel), stops_.push(p.text), out);
  }
  return out;
}

const char* MessageWriter::stop_reason() const {
  if (stops_.stopped()) return "stop_sequence";
  if (end_ == EndReason::kLength) return "max_tokens";
  if (parsed_ && !parsed_->message.tool_calls.empty()) return "tool_use";
  return "end_turn";
}

std::vector<std::string> MessageWriter::finish(EndReason reason, const Usage& usage) {
  end_ = reason;
  std::vector<std::string> out;
  std::vector<ReplyPiece> pieces;
  parsed_ = parser_.finish(pieces);
  if (!stops_.stopped()) {
    for (const ReplyPiece& p : pieces) {
      if (p.channel == ReplyChannel::kThink) append("thinking", p.text, out);
      if (p.channel == ReplyChannel::kResponse) append("text", stops_.push(p.text), out);
    }
    append("text", stops_.finish(), out);
  }
  close_block(out);
  if (!stops_.stopped()) {
    const std::vector<ToolCall>& calls = parsed_->message.tool_calls;
    for (size_t i = 0; i < calls.size(); ++i) {
      Block b{"tool_use", "", calls[i].id.empty() ? "toolu_" + id_ + "_" + std::to_string(i) : calls[i].id,
              calls[i].name, JsonValue::object()};
      b.input = calls[i].raw ? raw_input(calls[i].raw_arguments) : calls[i].arguments;
      blocks_.push_back(std::move(b));
      const int64_t index = static_cast<int64_t>(blocks_.size()) - 1;
      JsonValue start = JsonValue::object();
      start.set("type", JsonValue::string("content_block_start"));
      start.set("index", json_int(index));
      start.set("content_block", block_json(blocks_.back(), true));
      out.push_back(sse_named_event("content_block_start", start));
      JsonValue delta = JsonValue::object();
      delta.set("type", JsonValue::string("input_json_delta"));
      delta.set("partial_json", JsonValue::string(write_json(blocks_.back().input)));
      JsonValue e = JsonValue::object();
      e.set("type", JsonValue::string("content_block_delta"));
      e.set("index", json_int(index));
      e.set("delta", std::move(delta));
      out.push_back(sse_named_event("content_block_delta", e));
      JsonValue stop = JsonValue::object();
      stop.set("type", JsonValue::string("content_block_stop"));
      stop.set("index", json_int(index));
      out.push_back(sse_named_event("content_block_stop", stop));
    }
  }
  JsonValue delta = JsonValue::object();
  delta.set("stop_reason", JsonValue::string(stop_reason()));
  delta.set("stop_sequence", stops_.stopped() ? JsonValue::string(stops_.matched()) : JsonValue());
  JsonValue e = JsonValue::object();
  e.set("type", JsonValue::string("message_delta"));
  e.set("delta", std::move(delta));
  e.set("usage", anthropic_usage_json(usage));
  out.push_back(sse_named_event("message_delta", e));
  out.push_back(sse_named_event("message_stop", JsonValue::object().set("type", JsonValue::string("message_stop"))));
  return out;
}

std::string MessageWriter::body(const Usage& usage) const {
  JsonValue content = json_array();
  for (const Block& b : blocks_) content.items.push_back(block_json(b, false));
  JsonValue out = JsonValue::object();
  out.set("id", JsonValue::string(id_));
  out.set("type", JsonValue::string("message"));
  out.set("role", JsonValue::string("assistant"));
  out.set("model", JsonValue::string(model_));
  out.set("content", std::move(content));
  out.set("stop_reason", JsonValue::string(stop_reason()));
  out.set("stop_sequence", stops_.stopped() ? JsonValue::string(stops_.matched()) : JsonValue());
  out.set("usage", anthropic_usage_json(usage));
  return write_json(out);
}

}  // namespace k3::serve
