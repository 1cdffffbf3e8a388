#include "serve/responses_route.h"

#include "serve/api_error.h"
#include "serve/completion_route.h"
#include "serve/json_build.h"
#include "serve/openai_response.h"
#include "serve/responses_request.h"

namespace k3::serve {

namespace {

const JsonValue& member(const JsonValue& obj, const char* key) {
  static const JsonValue null;
  const JsonValue* v = obj.find(key);
  return v ? *v : null;
}

std::string text_of(const JsonValue& v) { return v.is_string() ? v.text : ""; }

JsonValue output_text(const std::string& text) {
  return JsonValue::object()
      .set("type", "output_text")
      .set("text", JsonValue::string(text))
      .set("annotations", JsonValue::array());
}

// The chat request's param in the Responses API's names.
std::string responses_param(const std::string& param) {
  if (param == "max_tokens") return "max_output_tokens";
  if (param.rfind("messages", 0) == 0) return "input";
  return param;
}

}  // namespace

JsonValue response_from_chat(const JsonValue& chat, const std::string& previous_response_id, bool store) {
  const std::string chat_id = text_of(member(chat, "id"));
  const std::string id = chat_id.rfind("chatcmpl-", 0) == 0 ? chat_id.substr(9) : chat_id;
  const JsonValue& choice = member(chat, "choices").items.at(0);
  const JsonValue& message = member(choice, "message");
  const bool cut = text_of(member(choice, "finish_reason")) == "length";
  JsonValue output = JsonValue::array();
  if (const std::string reasoning = text_of(member(message, "reasoning_content")); !reasoning.empty())
    output.push(
        JsonValue::object()
            .set("type", "reasoning")
            .set("id", JsonValue::string("rs_" + id))
            .set("summary",
                 JsonValue::array().push(
                     JsonValue::object().set("type", "summary_text").set("text", JsonValue::string(reasoning)))));
  const JsonValue& calls = member(message, "tool_calls");
  const std::string content = text_of(member(message, "content"));
  if (!content.empty() || calls.items.empty())
    output.push(JsonValue::object()
                    .set("type", "message")
                    .set("id", JsonValue::string("msg_" + id))
                    .set("status", cut ? "incomplete" : "completed")
                    .set("role", "assistant")
                    .set("content", JsonValue::array().push(output_text(content))));
  for (size_t i = 0; i < calls.items.size(); ++i) {
    const JsonValue& call = calls.items[i];
    output.push(JsonValue::object()
                    .set("type", "function_call")
                    .set("id", JsonValue::string("fc_" + id + "_" + std::to_string(i)))
                    .set("call_id", member(call, "id"))
                    .set("name", member(member(call, "function"), "name"))
                    .set("arguments", member(member(call, "function"), "arguments"))
                    .set("status", "completed"));
  }
  const JsonValue& u = member(chat, "usage");
  const JsonValue& cached = member(member(u, "prompt_tokens_details"), "cached_tokens");
  JsonValue usage = JsonValue::object()
                        .set("input_tokens", member(u, "prompt_tokens"))
                        .set("input_tokens_details", JsonValue::object().set("cached_tokens", cached))
                        .set("output_tokens", member(u, "completion_tokens"))
                        .set("output_tokens_details", JsonValue::object().set("reasoning_tokens", 0))
                        .set("total_tokens", member(u, "total_tokens"));
  JsonValue out =
      JsonValue::object()
          .set("id", JsonValue::string("resp_" + id))
          .set("object", "response")
          .set("created_at", member(chat, "created"))
          .set("status", cut ? "incomplete" : "completed")
          .set("error", JsonValue())
          .set("incomplete_details", cut ? JsonValue::object().set("reason", "max_output_tokens") : JsonValue())
          .set("model", member(chat, "model"))
          .set("output", std::move(output))
          .set("parallel_tool_calls", true)
          .set("previous_response_id",
               previous_response_id.empty() ? JsonValue() : JsonValue::string(previous_response_id))
          .set("store", store);
  out.set("usage", std::move(usage));
  return out;
}

std::string response_events(const JsonValue& response) {
  std::string out;
  int64_t sequence = 0;
  auto emit = [&](const char* type, JsonValue event) {
    JsonValue e = JsonValue::object().set("type", type).set("sequence_number", sequence++);
    for (size_t i = 0; i < event.keys.size(); ++i) e.set(event.keys[i], event.items[i]);
    out += std::string("event: ") + type + "\n" + sse_event(write_json(e));
  };
  JsonValue started = response;
  started.set("status", "in_progress").set("output", JsonValue::array()).set("usage", JsonValue());
  emit("response.created", JsonValue::object().set("response", started));
  emit("response.in_progress", JsonValue::object().set("response", started));
  const JsonValue& output = member(response, "output");
  for (size_t i = 0; i < output.items.size(); ++i) {
    const JsonValue& item = output.items[i];
    const JsonValue index(static_cast<int64_t>(i));
    const std::string type = text_of(member(item, "type"));
    JsonValue added = item;
    if (type == "message") added.set("status", "in_progress").set("content", JsonValue::array());
    if (type == "function_call") added.set("status", "in_progress").set("arguments", "");
    emit("response.output_item.added", JsonValue::object().set("output_index", index).set("item", added));
    const JsonValue at = JsonValue::object().set("item_id", member(item, "id")).set("output_index", index);
    if (type == "message") {
      const std::string text = text_of(member(member(item, "content").items.at(0), "text"));
      JsonValue part = at;
      part.set("content_index", 0);
      emit("response.content_part.added", JsonValue(part).set("part", output_text("")));
      emit("response.output_text.delta", JsonValue(part).set("delta", JsonValue::string(text)));
      emit("response.output_text.done", JsonValue(part).set("text", JsonValue::string(text)));
      emit("response.content_part.done", JsonValue(part).set("part", output_text(text)));
    } else if (type == "function_call") {
      emit("response.function_call_arguments.delta", JsonValue(at).set("delta", member(item, "arguments")));
      emit("response.function_call_arguments.done", JsonValue(at).set("arguments", member(item, "arguments")));
    }
    emit("response.output_item.done", JsonValue::object().set("output_index", index).set("item", item));
  }
  const bool done = text_of(member(response, "status")) == "completed";
  emit(done ? "response.completed" : "response.incomplete", JsonValue::object().set("response", response));
  return out;
}

void handle_responses(const httplib::Request& req, httplib::Response& res, const ServerOptions& options,
                      const ServeBackend& backend, ResponseStore& store) {
  const RequestLimits limits{options.max_depth, options.context, options.model_name, options.thinking, options.effort};
  ResponsesRequest r = parse_responses_request(req.body, limits, store);
  httplib::Request chat_req;
  chat_req.body = write_json(r.chat);
  httplib::Response chat_res;
  try {
    handle_completion(chat_req, chat_res, Endpoint::kChat, options, backend);
  } catch (const ApiError& e) {
    if (chat_res.has_header("Retry-After")) res.set_header("Retry-After", chat_res.get_header_value("Retry-After"));
    std::string message = e.what();
    const std::string param = responses_param(e.param());
    if (!e.param().empty() && message.rfind(e.param(), 0) == 0) message.replace(0, e.param().size(), param);
    throw ApiError(e.status(), message, param, e.code());
  }
  JsonValue chat;
  std::string error;
  if (!parse_json(chat_res.body, chat, error)) throw ApiError(500, "the reply could not be read: " + error);
  JsonValue response = response_from_chat(chat, r.previous_response_id, r.store);
  if (r.store) {
    const JsonValue& message = member(member(chat, "choices").items.at(0), "message");
    JsonValue reply = JsonValue::object().set("role", "assistant");
    reply.set("content", JsonValue::string(text_of(member(message, "content"))));
    if (const JsonValue* reasoning = message.find("reasoning_content")) reply.set("reasoning_content", *reasoning);
    if (const JsonValue* calls = message.find("tool_calls")) reply.set("tool_calls", *calls);
    JsonValue conversation = r.messages;
    conversation.push(std::move(reply));
    store.keep(text_of(member(response, "id")), std::move(conversation));
  }
  if (r.stream) {
    res.set_header("Cache-Control", "no-cache");
    res.set_content(response_events(response), "text/event-stream");
  } else {
    res.set_content(write_json(response), "application/json");
  }
}

}  // namespace k3::serve
