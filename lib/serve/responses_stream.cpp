#include "serve/responses_stream.h"

#include "serve/json_build.h"
#include "serve/openai_response.h"
#include "serve/responses_route.h"

namespace k3::serve {

const JsonValue& json_member(const JsonValue& obj, const char* key) {
  static const JsonValue null;
  const JsonValue* v = obj.find(key);
  return v ? *v : null;
}

std::string json_text(const JsonValue& v) { return v.is_string() ? v.text : ""; }

JsonValue output_text(const std::string& text) {
  return JsonValue::object()
      .set("type", "output_text")
      .set("text", JsonValue::string(text))
      .set("annotations", JsonValue::array());
}

namespace {

JsonValue summary_text(const std::string& text) {
  return JsonValue::object().set("type", "summary_text").set("text", JsonValue::string(text));
}

}  // namespace

std::string ResponsesStream::event(const char* type, JsonValue fields) {
  JsonValue e = JsonValue::object().set("type", type).set("sequence_number", sequence_++);
  for (size_t i = 0; i < fields.keys.size(); ++i) e.set(fields.keys[i], fields.items[i]);
  return std::string("event: ") + type + "\n" + sse_event(write_json(e));
}

JsonValue ResponsesStream::at() const {
  return JsonValue::object().set("item_id", JsonValue::string(open_id_)).set("output_index", items_ - 1);
}

std::string ResponsesStream::open_item(JsonValue item) {
  open_id_ = json_text(json_member(item, "id"));
  const int64_t index = items_++;
  return event("response.output_item.added", JsonValue::object().set("output_index", index).set("item", item));
}

std::string ResponsesStream::push(std::string_view chat_sse) {
  pending_.append(chat_sse);
  std::string out;
  for (size_t end; !ended_ && (end = pending_.find("\n\n")) != std::string::npos;) {
    const std::string block = pending_.substr(0, end);
    pending_.erase(0, end + 2);
    if (block.rfind("data: ", 0) != 0) continue;  // a ": prefill" comment
    const std::string data = block.substr(6);
    if (data == "[DONE]") {
      out += finish();
      continue;
    }
    JsonValue chunk;
    std::string error;
    if (!parse_json(data, chunk, error)) continue;  // the chat writer's own output: always JSON
    out += on_chunk(chunk);
  }
  return out;
}

std::string ResponsesStream::on_chunk(const JsonValue& chunk) {
  std::string out;
  if (const JsonValue* e = chunk.find("error")) {
    failed_ = ended_ = true;
    return event("error", JsonValue::object()
                              .set("code", json_member(*e, "code"))
                              .set("message", json_member(*e, "message"))
                              .set("param", json_member(*e, "param")));
  }
  if (!started_) {
    started_ = true;
    first_ = chunk;
    const std::string chat_id = json_text(json_member(chunk, "id"));
    id_ = chat_id.rfind("chatcmpl-", 0) == 0 ? chat_id.substr(9) : chat_id;
    JsonValue skeleton = JsonValue::object()
                             .set("id", json_member(chunk, "id"))
                             .set("created", json_member(chunk, "created"))
                             .set("model", json_member(chunk, "model"));
    skeleton.set("choices", JsonValue::array().push(JsonValue::object().set("message", JsonValue::object())));
    JsonValue started = response_from_chat(skeleton, previous_response_id_, store_, extras_);
    started.set("status", "in_progress").set("output", JsonValue::array()).set("usage", JsonValue());
    out += event("response.created", JsonValue::object().set("response", started));
    out += event("response.in_progress", JsonValue::object().set("response", started));
  }
  if (const JsonValue& u = json_member(chunk, "usage"); u.is_object()) usage_ = u;
  const JsonValue& choices = json_member(chunk, "choices");
  if (choices.items.empty()) return out;
  const JsonValue& choice = choices.items[0];
  const JsonValue& delta = json_member(choice, "delta");
  if (const std::string r = json_text(json_member(delta, "reasoning_content")); !r.empty()) {
    if (open_ != Open::kReasoning) {
      out += open_item(JsonValue::object()
                           .set("type", "reasoning")
                           .set("id", JsonValue::string("rs_" + id_))
                           .set("summary", JsonValue::array()));
      open_ = Open::kReasoning;
      out += event("response.reasoning_summary_part.added",
                   JsonValue(at()).set("summary_index", 0).set("part", summary_text("")));
    }
    reasoning_ += r;
    out += event("response.reasoning_summary_text.delta",
                 JsonValue(at()).set("summary_index", 0).set("delta", JsonValue::string(r)));
  }
  if (const std::string c = json_text(json_member(delta, "content")); !c.empty()) {
    if (open_ != Open::kMessage) {
      out += close_reasoning();
      out += open_item(JsonValue::object()
                           .set("type", "message")
                           .set("id", JsonValue::string("msg_" + id_))
                           .set("status", "in_progress")
                           .set("role", "assistant")
                           .set("content", JsonValue::array()));
      open_ = Open::kMessage;
      message_done_ = true;
      out += event("response.content_part.added", JsonValue(at()).set("content_index", 0).set("part", output_text("")));
    }
    content_ += c;
    out +=
        event("response.output_text.delta", JsonValue(at()).set("content_index", 0).set("delta", JsonValue::string(c)));
  }
  for (const JsonValue& call : json_member(delta, "tool_calls").items) {
    JsonValue copy = JsonValue::object();
    for (size_t i = 0; i < call.keys.size(); ++i)
      if (call.keys[i] != "index") copy.set(call.keys[i], call.items[i]);  // "index": a chunk's, not the message's
    tool_calls_.push(std::move(copy));
  }
  if (const std::string f = json_text(json_member(choice, "finish_reason")); !f.empty()) finish_reason_ = f;
  return out;
}

std::string ResponsesStream::close_reasoning() {
  if (open_ != Open::kReasoning) return "";
  open_ = Open::kNone;
  const JsonValue item = reasoning_item("rs_" + id_, reasoning_, extras_);
  std::string out = event("response.reasoning_summary_text.done",
                          JsonValue(at()).set("summary_index", 0).set("text", JsonValue::string(reasoning_)));
  out += event("response.reasoning_summary_part.done",
               JsonValue(at()).set("summary_index", 0).set("part", summary_text(reasoning_)));
  out += event("response.output_item.done", JsonValue::object().set("output_index", items_ - 1).set("item", item));
  return out;
}

std::string ResponsesStream::close_message() {
  if (open_ != Open::kMessage) return "";
  open_ = Open::kNone;
  JsonValue item = JsonValue::object()
                       .set("type", "message")
                       .set("id", JsonValue::string("msg_" + id_))
                       .set("status", finish_reason_ == "length" ? "incomplete" : "completed")
                       .set("role", "assistant")
                       .set("content", JsonValue::array().push(output_text(content_)));
  std::string out = event("response.output_text.done",
                          JsonValue(at()).set("content_index", 0).set("text", JsonValue::string(content_)));
  out +=
      event("response.content_part.done", JsonValue(at()).set("content_index", 0).set("part", output_text(content_)));
  out += event("response.output_item.done", JsonValue::object().set("output_index", items_ - 1).set("item", item));
  return out;
}

std::string ResponsesStream::finish() {
  ended_ = true;
  JsonValue message = JsonValue::object().set("role", "assistant");
  message.set("content", content_.empty() && !tool_calls_.items.empty() ? JsonValue() : JsonValue::string(content_));
  if (!reasoning_.empty()) message.set("reasoning_content", JsonValue::string(reasoning_));
  if (!tool_calls_.items.empty()) message.set("tool_calls", tool_calls_);
  chat_ = JsonValue::object()
              .set("id", json_member(first_, "id"))
              .set("object", "chat.completion")
              .set("created", json_member(first_, "created"))
              .set("model", json_member(first_, "model"));
  chat_.set("choices", JsonValue::array().push(JsonValue::object()
                                                   .set("index", 0)
                                                   .set("message", message)
                                                   .set("finish_reason", JsonValue::string(finish_reason_))));
  chat_.set("usage", usage_);
  const JsonValue response = response_from_chat(chat_, previous_response_id_, store_, extras_);
  std::string out = close_reasoning();
  // An empty answer without calls is still a message item (as non-streamed).
  if (!message_done_ && tool_calls_.items.empty()) {
    out += open_item(JsonValue::object()
                         .set("type", "message")
                         .set("id", JsonValue::string("msg_" + id_))
                         .set("status", "in_progress")
                         .set("role", "assistant")
                         .set("content", JsonValue::array()));
    open_ = Open::kMessage;
    out += event("response.content_part.added", JsonValue(at()).set("content_index", 0).set("part", output_text("")));
  }
  out += close_message();
  for (const JsonValue& item : json_member(response, "output").items) {
    if (json_text(json_member(item, "type")) != "function_call") continue;
    JsonValue added = item;
    added.set("status", "in_progress").set("arguments", "");
    out += open_item(added);
    out +=
        event("response.function_call_arguments.delta", JsonValue(at()).set("delta", json_member(item, "arguments")));
    out += event("response.function_call_arguments.done",
                 JsonValue(at()).set("arguments", json_member(item, "arguments")));
    out += event("response.output_item.done", JsonValue::object().set("output_index", items_ - 1).set("item", item));
  }
  const bool done = json_text(json_member(response, "status")) == "completed";
  out += event(done ? "response.completed" : "response.incomplete", JsonValue::object().set("response", response));
  return out;
}

}  // namespace k3::serve
