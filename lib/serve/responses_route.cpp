#include "serve/responses_route.h"

#include "serve/api_error.h"
#include "serve/completion_route.h"
#include "serve/json_build.h"
#include "serve/openai_response.h"
#include "serve/responses_request.h"
#include "serve/responses_stream.h"

namespace k3::serve {

namespace {

// The chat request's param in the Responses API's names.
std::string responses_param(const std::string& param) {
  if (param == "max_tokens") return "max_output_tokens";
  if (param.rfind("messages", 0) == 0) return "input";
  return param;
}

}  // namespace

JsonValue response_from_chat(const JsonValue& chat, const std::string& previous_response_id, bool store,
                             const ResponseExtras& extras) {
  const std::string chat_id = json_text(json_member(chat, "id"));
  const std::string id = chat_id.rfind("chatcmpl-", 0) == 0 ? chat_id.substr(9) : chat_id;
  const JsonValue& choice = json_member(chat, "choices").items.at(0);
  const JsonValue& message = json_member(choice, "message");
  const bool cut = json_text(json_member(choice, "finish_reason")) == "length";
  JsonValue output = JsonValue::array();
  if (const std::string reasoning = json_text(json_member(message, "reasoning_content")); !reasoning.empty())
    output.push(reasoning_item("rs_" + id, reasoning, extras));
  const JsonValue& calls = json_member(message, "tool_calls");
  const std::string content = json_text(json_member(message, "content"));
  if (!content.empty() || calls.items.empty())
    output.push(JsonValue::object()
                    .set("type", "message")
                    .set("id", JsonValue::string("msg_" + id))
                    .set("status", cut ? "incomplete" : "completed")
                    .set("role", "assistant")
                    .set("content", JsonValue::array().push(output_text(content))));
  for (size_t i = 0; i < calls.items.size(); ++i) {
    const JsonValue& call = calls.items[i];
    const JsonValue& name = json_member(json_member(call, "function"), "name");
    JsonValue item = JsonValue::object()
                         .set("type", "function_call")
                         .set("id", JsonValue::string("fc_" + id + "_" + std::to_string(i)))
                         .set("call_id", json_member(call, "id"))
                         .set("name", name);
    if (auto ns = extras.namespaces.find(json_text(name)); ns != extras.namespaces.end())
      item.set("namespace", JsonValue::string(ns->second));
    item.set("arguments", json_member(json_member(call, "function"), "arguments")).set("status", "completed");
    output.push(std::move(item));
  }
  const JsonValue& u = json_member(chat, "usage");
  const JsonValue& cached = json_member(json_member(u, "prompt_tokens_details"), "cached_tokens");
  JsonValue usage = JsonValue::object()
                        .set("input_tokens", json_member(u, "prompt_tokens"))
                        .set("input_tokens_details", JsonValue::object().set("cached_tokens", cached))
                        .set("output_tokens", json_member(u, "completion_tokens"))
                        .set("output_tokens_details", JsonValue::object().set("reasoning_tokens", 0))
                        .set("total_tokens", json_member(u, "total_tokens"));
  JsonValue out =
      JsonValue::object()
          .set("id", JsonValue::string("resp_" + id))
          .set("object", "response")
          .set("created_at", json_member(chat, "created"))
          .set("status", cut ? "incomplete" : "completed")
          .set("error", JsonValue())
          .set("incomplete_details", cut ? JsonValue::object().set("reason", "max_output_tokens") : JsonValue())
          .set("model", json_member(chat, "model"))
          .set("output", std::move(output))
          .set("parallel_tool_calls", true)
          .set("previous_response_id",
               previous_response_id.empty() ? JsonValue() : JsonValue::string(previous_response_id))
          .set("store", store);
  if (!extras.omitted_tools.empty()) {
    JsonValue omitted = JsonValue::array();
    for (const std::string& type : extras.omitted_tools) omitted.push(JsonValue::string(type));
    out.set("omitted_tools", std::move(omitted));
  }
  out.set("usage", std::move(usage));
  return out;
}

namespace {

// The chat reply kept for a later previous_response_id (store, the default).
void keep_reply(ResponseStore& store, const ResponsesRequest& r, const JsonValue& chat, const JsonValue& response) {
  if (!r.store) return;
  const JsonValue& message = json_member(json_member(chat, "choices").items.at(0), "message");
  JsonValue reply = JsonValue::object().set("role", "assistant");
  reply.set("content", JsonValue::string(json_text(json_member(message, "content"))));
  if (const JsonValue* reasoning = message.find("reasoning_content")) reply.set("reasoning_content", *reasoning);
  if (const JsonValue* calls = message.find("tool_calls")) reply.set("tool_calls", *calls);
  JsonValue conversation = r.messages;
  conversation.push(std::move(reply));
  store.keep(json_text(json_member(response, "id")), std::move(conversation));
}

// Runs the chat request; a refusal in the Responses API's names.
void run_chat(const ResponsesRequest& r, httplib::Response& chat_res, httplib::Response& res,
              const ServerOptions& options, const ServeBackend& backend) {
  httplib::Request chat_req;
  chat_req.body = write_json(r.chat);
  try {
    handle_completion(chat_req, chat_res, Endpoint::kChat, options, backend);
  } catch (const ApiError& e) {
    if (chat_res.has_header("Retry-After")) res.set_header("Retry-After", chat_res.get_header_value("Retry-After"));
    std::string message = e.what();
    const std::string param = responses_param(e.param());
    if (!e.param().empty() && message.rfind(e.param(), 0) == 0) message.replace(0, e.param().size(), param);
    throw ApiError(e.status(), message, param, e.code());
  }
}

// stream: true: the chat completion streamed, each of its chunks turned
// into Responses events as it comes (responses_stream.h).
void stream_response(ResponsesRequest r, httplib::Response& res, const ServerOptions& options,
                     const ServeBackend& backend, ResponseStore& store) {
  r.chat.set("stream", true).set("stream_options", JsonValue::object().set("include_usage", true));
  httplib::Response chat_res;
  run_chat(r, chat_res, res, options, backend);
  // The chat route's provider and releaser, taken out of chat_res (whose
  // destructor would otherwise release them as failed: cancel the job).
  struct Relay {
    httplib::ContentProvider chat;
    httplib::ContentProviderResourceReleaser release;
    ResponsesStream events;
    ResponsesRequest request;
    bool ended = false;
  };
  auto relay = std::make_shared<Relay>(Relay{std::move(chat_res.content_provider_),
                                             std::move(chat_res.content_provider_resource_releaser_),
                                             ResponsesStream(r.previous_response_id, r.store, r.extras), std::move(r)});
  chat_res.content_provider_ = nullptr;
  chat_res.content_provider_resource_releaser_ = nullptr;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [relay, &store](size_t, httplib::DataSink& sink) {
        std::string out;
        httplib::DataSink chat_sink;
        chat_sink.write = [&](const char* data, size_t n) {
          out += relay->events.push(std::string_view(data, n));
          return true;
        };
        chat_sink.done = [&] { relay->ended = true; };
        chat_sink.is_writable = [] { return true; };
        const bool more = relay->chat(0, 0, chat_sink);
        if (relay->ended && !relay->events.failed() && !relay->events.chat().is_null()) {
          const JsonValue& chat = relay->events.chat();
          keep_reply(store, relay->request, chat,
                     response_from_chat(chat, relay->request.previous_response_id, relay->request.store,
                                        relay->request.extras));
        }
        if (!out.empty() && !sink.write(out.data(), out.size())) return false;  // the client is gone
        if (relay->ended || !more) sink.done();
        return more;
      },
      [relay](bool success) {
        if (relay->release) relay->release(success);
      });
}

}  // namespace

void handle_responses(const httplib::Request& req, httplib::Response& res, const ServerOptions& options,
                      const ServeBackend& backend, ResponseStore& store) {
  const RequestLimits limits{options.max_depth, options.context, options.model_name, options.thinking, options.effort};
  ResponsesRequest r = parse_responses_request(req.body, limits, store, options.omit_hosted_tools);
  if (r.stream) {
    stream_response(std::move(r), res, options, backend, store);
    return;
  }
  httplib::Response chat_res;
  run_chat(r, chat_res, res, options, backend);
  JsonValue chat;
  std::string error;
  if (!parse_json(chat_res.body, chat, error)) throw ApiError(500, "the reply could not be read: " + error);
  const JsonValue response = response_from_chat(chat, r.previous_response_id, r.store, r.extras);
  keep_reply(store, r, chat, response);
  res.set_content(write_json(response), "application/json");
}

}  // namespace k3::serve
