#include "serve/openai_response.h"

#include "chat/python_json.h"
#include "serve/json_build.h"
#include "serve/logprobs_json.h"

namespace k3::serve {

std::string sse_event(const std::string& json) { return "data: " + json + "\n\n"; }

JsonValue usage_json(const Usage& u) {
  JsonValue out = JsonValue::object();
  out.set("prompt_tokens", json_int(u.prompt_tokens));
  out.set("completion_tokens", json_int(u.completion_tokens));
  out.set("total_tokens", json_int(u.prompt_tokens + u.completion_tokens));
  JsonValue details = JsonValue::object();
  details.set("cached_tokens", json_int(u.cached_tokens));
  out.set("prompt_tokens_details", std::move(details));
  return out;
}

ReplyWriter::ReplyWriter(Endpoint endpoint, const Vocabulary& vocab, bool thinking, std::vector<std::string> stop,
                         ResponseMeta meta, bool include_usage)
    : endpoint_(endpoint),
      vocab_(vocab),
      thinking_(thinking),
      meta_(std::move(meta)),
      include_usage_(include_usage),
      stops_(std::move(stop)) {
  if (endpoint_ == Endpoint::kChat) parser_.emplace(vocab_, thinking_);
}

JsonValue ReplyWriter::envelope(bool streamed, JsonValue choices) const {
  const bool chat = endpoint_ == Endpoint::kChat;
  JsonValue out = JsonValue::object();
  out.set("id", JsonValue::string(meta_.id));
  out.set("object", JsonValue::string(!chat      ? "text_completion"
                                      : streamed ? "chat.completion.chunk"
                                                 : "chat.completion"));
  out.set("created", json_int(meta_.created));
  out.set("model", JsonValue::string(meta_.model));
  out.set("choices", std::move(choices));
  return out;
}

void ReplyWriter::add_logprobs(const PositionLogprobs& p) { logprobs_.push_back(p); }

std::string ReplyWriter::chunk(JsonValue delta_or_text, const char* finish_reason) {
  const bool chat = endpoint_ == Endpoint::kChat;
  JsonValue choice = JsonValue::object();
  choice.set("index", json_int(meta_.choice));
  choice.set(chat ? "delta" : "text", std::move(delta_or_text));
  if (meta_.logprobs) {
    const std::span<const PositionLogprobs> fresh(logprobs_.data() + logprobs_sent_, logprobs_.size() - logprobs_sent_);
    choice.set("logprobs", logprobs_json(endpoint_, fresh, vocab_, text_sent_));
    for (const PositionLogprobs& p : fresh)
      text_sent_ += static_cast<int64_t>(vocab_.bytes(static_cast<TokenId>(p.chosen.id)).size());
    logprobs_sent_ = logprobs_.size();
  } else {
    choice.set("logprobs", JsonValue());
  }
  choice.set("finish_reason", finish_reason ? JsonValue::string(finish_reason) : JsonValue());
  JsonValue choices = json_array();
  choices.items.push_back(std::move(choice));
  JsonValue out = envelope(true, std::move(choices));
  if (include_usage_) out.set("usage", JsonValue());  // OpenAI: null on every chunk but the usage one
  return sse_event(write_json(out));
}

std::vector<std::string> ReplyWriter::start() {
  if (endpoint_ != Endpoint::kChat) return {};
  JsonValue delta = JsonValue::object();
  delta.set("role", JsonValue::string("assistant"));
  delta.set("content", JsonValue::string(""));
  return {chunk(std::move(delta), nullptr)};
}

std::vector<std::string> ReplyWriter::deltas(const std::vector<ReplyPiece>& pieces) {
  std::string reasoning, content;
  for (const ReplyPiece& p : pieces) {
    if (p.channel == ReplyChannel::kThink) reasoning += p.text;
    if (p.channel == ReplyChannel::kResponse) content += stops_.push(p.text);
  }
  if (reasoning.empty() && content.empty()) return {};
  reasoning_ += reasoning;
  content_ += content;
  JsonValue delta = JsonValue::object();
  if (!reasoning.empty()) delta.set("reasoning_content", JsonValue::string(reasoning));
  if (!content.empty()) delta.set("content", JsonValue::string(content));
  return {chunk(std::move(delta), nullptr)};
}

std::vector<std::string> ReplyWriter::push(int32_t id, bool stop_id) {
  if (endpoint_ == Endpoint::kChat) {
    if (stops_.stopped()) return {};
    std::vector<ReplyPiece> pieces;
    parser_->push(static_cast<TokenId>(id), pieces);
    return deltas(pieces);
  }
  if (stop_id || stops_.stopped()) return {};
  std::string text;
  decoder_.push(vocab_.bytes(static_cast<TokenId>(id)), text);
  text = stops_.push(text);
  if (text.empty()) return {};
  text_ += text;
  return {chunk(JsonValue::string(text), nullptr)};
}

JsonValue ReplyWriter::tool_calls_json(bool with_index) const {
  JsonValue calls = json_array();
  if (!parsed_) return calls;
  const std::vector<ToolCall>& tc = parsed_->message.tool_calls;
  for (size_t i = 0; i < tc.size(); ++i) {
    JsonValue fn = JsonValue::object();
    fn.set("name", JsonValue::string(tc[i].name));
    // SPEC section 5's text of the arguments (python_json_dumps, not the
    // response writer): the client sends it back and the next prompt must
    // render to the ids the model generated, for the kept state to continue.
    fn.set("arguments", JsonValue::string(tc[i].raw ? tc[i].raw_arguments : python_json_dumps(tc[i].arguments)));
    JsonValue call = JsonValue::object();
    if (with_index) call.set("index", json_int(static_cast<int64_t>(i)));
    call.set("id", JsonValue::string(tc[i].id.empty() ? "call_" + meta_.id + "_" + std::to_string(i) : tc[i].id));
    call.set("type", JsonValue::string("function"));
    call.set("function", std::move(fn));
    calls.items.push_back(std::move(call));
  }
  return calls;
}

const char* ReplyWriter::finish_reason() const {
  if (end_ == EndReason::kLength && !stops_.stopped()) return "length";
  if (parsed_ && !parsed_->message.tool_calls.empty()) return "tool_calls";
  return "stop";
}

std::vector<std::string> ReplyWriter::finish(EndReason reason, const Usage& usage) {
  std::vector<std::string> out = finish_choice(reason);
  for (std::string& c : close(usage)) out.push_back(std::move(c));
  return out;
}

std::vector<std::string> ReplyWriter::close(const Usage& usage) const {
  std::vector<std::string> out;
  if (include_usage_) {
    JsonValue u = envelope(true, json_array());
    u.set("usage", usage_json(usage));
    out.push_back(sse_event(write_json(u)));
  }
  out.emplace_back(sse_done());
  return out;
}

std::vector<std::string> ReplyWriter::finish_choice(EndReason reason) {
  end_ = reason;
  std::vector<std::string> out;
  if (endpoint_ == Endpoint::kChat) {
    std::vector<ReplyPiece> pieces;
    parsed_ = parser_->finish(pieces);
    if (stops_.stopped()) pieces.clear();
    out = deltas(pieces);
    if (const std::string rest = stops_.finish(); !rest.empty()) {
      content_ += rest;
      JsonValue delta = JsonValue::object();
      delta.set("content", JsonValue::string(rest));
      out.push_back(chunk(std::move(delta), nullptr));
    }
    if (!parsed_->message.tool_calls.empty()) {
      JsonValue delta = JsonValue::object();
      delta.set("tool_calls", tool_calls_json(true));
      out.push_back(chunk(std::move(delta), nullptr));
    }
    out.push_back(chunk(JsonValue::object(), finish_reason()));
  } else {
    std::string text;
    if (!stops_.stopped()) decoder_.finish(text);
    text = stops_.push(text) + stops_.finish();
    text_ += text;
    out.push_back(chunk(JsonValue::string(text), finish_reason()));
  }
  return out;
}

std::string ReplyWriter::body(const Usage& usage) const { return body({this}, usage); }

std::string ReplyWriter::body(const std::vector<const ReplyWriter*>& choices, const Usage& usage) {
  JsonValue list = json_array();
  for (const ReplyWriter* w : choices) list.items.push_back(w->choice_json());
  JsonValue out = choices.front()->envelope(false, std::move(list));
  out.set("usage", usage_json(usage));
  return write_json(out);
}

JsonValue ReplyWriter::choice_json() const {
  const bool chat = endpoint_ == Endpoint::kChat;
  JsonValue choice = JsonValue::object();
  choice.set("index", json_int(meta_.choice));
  if (chat) {
    JsonValue message = JsonValue::object();
    message.set("role", JsonValue::string("assistant"));
    const bool calls = parsed_ && !parsed_->message.tool_calls.empty();
    message.set("content", calls && content_.empty() ? JsonValue() : JsonValue::string(content_));
    if (thinking_) message.set("reasoning_content", JsonValue::string(reasoning_));
    if (calls) message.set("tool_calls", tool_calls_json(false));
    choice.set("message", std::move(message));
  } else {
    choice.set("text", JsonValue::string(text_));
  }
  choice.set("logprobs", meta_.logprobs ? logprobs_json(endpoint_, logprobs_, vocab_) : JsonValue());
  choice.set("finish_reason", JsonValue::string(finish_reason()));
  return choice;
}

}  // namespace k3::serve
