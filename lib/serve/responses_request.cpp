#include "serve/responses_request.h"

#include <optional>
#include <set>

#include "serve/api_error.h"
#include "serve/request_fields.h"
#include "serve/response_store.h"

namespace k3::serve {

namespace {

const std::string& string_field(const JsonValue& obj, const char* key, const std::string& where) {
  const JsonValue* v = present(obj, key);
  if (!v || !v->is_string())
    refuse_field(where + "." + key, "must be a string" + (v ? found_kind(*v) : std::string(" (missing)")));
  return v->text;
}

// A message's content: a string, or parts of type input_text / output_text /
// text, as chat's text parts.
JsonValue content_of(const JsonValue& content, const std::string& where) {
  if (content.is_string()) return content;
  if (!content.is_array()) refuse_field(where, "must be a string or a list of text parts" + found_kind(content));
  JsonValue parts = JsonValue::array();
  for (size_t i = 0; i < content.items.size(); ++i) {
    const JsonValue& part = content.items[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    const std::string& type = string_field(part, "type", at);
    if (type != "input_text" && type != "output_text" && type != "text")
      refuse_field(at + ".type", "\"" + type + "\" is not supported (K3 reads text: input_text or output_text)");
    parts.push(JsonValue::object().set("type", "text").set("text", JsonValue::string(string_field(part, "text", at))));
  }
  return parts;
}

// The last message when it is the assistant's (a function_call joins it).
JsonValue* open_assistant(JsonValue& messages) {
  if (messages.items.empty()) return nullptr;
  JsonValue& last = messages.items.back();
  const JsonValue* role = last.find("role");
  return role && role->text == "assistant" ? &last : nullptr;
}

// A reasoning item's text: its encrypted_content read back (exact, as k3
// wrote it), else its summary parts.
std::string reasoning_text(const JsonValue& item, const std::string& at) {
  if (const JsonValue* sealed = present(item, "encrypted_content")) {
    if (!sealed->is_string()) refuse_field(at + ".encrypted_content", "must be a string" + found_kind(*sealed));
    std::optional<std::string> text = reasoning_of(sealed->text);
    if (!text)
      refuse_field(at + ".encrypted_content",
                   "was not written by k3-serve (it reads back only the reasoning it sent; drop the item or send "
                   "its summary alone)");
    return *text;
  }
  std::string text;
  if (const JsonValue* summary = present(item, "summary"); summary && summary->is_array())
    for (const JsonValue& s : summary->items)
      if (const JsonValue* t = s.find("text"); t && t->is_string()) text += t->text;
  return text;
}

void add_items(const JsonValue& input, JsonValue& messages) {
  std::string reasoning;  // a reasoning item's summary, for the assistant message after it
  auto assistant = [&](JsonValue m) {
    if (!reasoning.empty()) m.set("reasoning_content", JsonValue::string(reasoning));
    reasoning.clear();
    messages.push(std::move(m));
  };
  for (size_t i = 0; i < input.items.size(); ++i) {
    const JsonValue& item = input.items[i];
    const std::string at = "input[" + std::to_string(i) + "]";
    if (!item.is_object()) refuse_field(at, "must be an object" + found_kind(item));
    const JsonValue* t = present(item, "type");
    const std::string type = t && t->is_string() ? t->text : (t ? "" : "message");
    if (type == "message") {
      const std::string& role = string_field(item, "role", at);
      const JsonValue* content = present(item, "content");
      if (!content) refuse_field(at + ".content", "missing");
      JsonValue m = JsonValue::object().set("role", JsonValue::string(role == "developer" ? "system" : role));
      m.set("content", content_of(*content, at + ".content"));
      if (role == "assistant") assistant(std::move(m));
      else messages.push(std::move(m));
    } else if (type == "function_call") {
      JsonValue call = JsonValue::object();
      call.set("id", JsonValue::string(string_field(item, "call_id", at)));
      call.set("type", "function");
      call.set("function", JsonValue::object()
                               .set("name", JsonValue::string(string_field(item, "name", at)))
                               .set("arguments", JsonValue::string(string_field(item, "arguments", at))));
      JsonValue* open = reasoning.empty() ? open_assistant(messages) : nullptr;
      if (!open) {
        assistant(JsonValue::object().set("role", "assistant").set("content", ""));
        open = &messages.items.back();
      }
      JsonValue calls = open->find("tool_calls") ? *open->find("tool_calls") : JsonValue::array();
      calls.push(std::move(call));
      open->set("tool_calls", std::move(calls));
    } else if (type == "function_call_output") {
      const JsonValue* output = present(item, "output");
      if (!output) refuse_field(at + ".output", "missing");
      messages.push(JsonValue::object()
                        .set("role", "tool")
                        .set("tool_call_id", JsonValue::string(string_field(item, "call_id", at)))
                        .set("content", content_of(*output, at + ".output")));
    } else if (type == "reasoning") {
      reasoning += reasoning_text(item, at);
    } else {
      refuse_field(at + ".type",
                   "\"" + type + "\" is not supported (message, function_call, function_call_output or reasoning)");
    }
  }
}

JsonValue chat_function(const JsonValue& tool, const std::string& at) {
  JsonValue fn = JsonValue::object().set("name", JsonValue::string(string_field(tool, "name", at)));
  for (const char* key : {"description", "parameters", "strict"})
    if (const JsonValue* v = present(tool, key)) fn.set(key, *v);
  return JsonValue::object().set("type", "function").set("function", std::move(fn));
}

// Function tools as chat's; a namespace's functions among them (its name
// kept for the calls' items). Any other type is a tool k3 cannot run
// (web_search, file_search, ...): refused, or left out and listed when
// `omit_hosted`.
JsonValue chat_tools(const JsonValue& tools, bool omit_hosted, ResponseExtras& extras) {
  if (!tools.is_array()) refuse_field("tools", "must be a list" + found_kind(tools));
  JsonValue out = JsonValue::array();
  for (size_t i = 0; i < tools.items.size(); ++i) {
    const JsonValue& tool = tools.items[i];
    const std::string at = "tools[" + std::to_string(i) + "]";
    const std::string& type = string_field(tool, "type", at);
    if (type == "function") {
      out.push(chat_function(tool, at));
    } else if (type == "namespace") {
      const std::string& space = string_field(tool, "name", at);
      const JsonValue* inner = present(tool, "tools");
      if (!inner || !inner->is_array())
        refuse_field(at + ".tools", "must be a list" + (inner ? found_kind(*inner) : std::string(" (missing)")));
      for (size_t j = 0; j < inner->items.size(); ++j) {
        const std::string in = at + ".tools[" + std::to_string(j) + "]";
        if (string_field(inner->items[j], "type", in) != "function")
          refuse_field(in + ".type", "only function tools are served in a namespace (found \"" +
                                         inner->items[j].find("type")->text + "\")");
        out.push(chat_function(inner->items[j], in));
        extras.namespaces[string_field(inner->items[j], "name", in)] = space;
      }
    } else if (omit_hosted) {
      extras.omitted_tools.push_back(type);
    } else {
      refuse_field(at + ".type", "\"" + type +
                                     "\" is not served: k3 runs function tools only (a hosted tool such as "
                                     "web_search runs on OpenAI's servers). Turn it off in the client (Codex: "
                                     "web_search = \"disabled\" in config.toml), or start k3-serve with "
                                     "--hosted-tools omit to leave such tools out");
    }
  }
  return out;
}

JsonValue chat_tool_choice(const JsonValue& choice) {
  if (choice.is_string()) return choice;
  if (choice.is_object() && present(choice, "type") && choice.find("type")->text == "function")
    return JsonValue::object()
        .set("type", "function")
        .set("function",
             JsonValue::object().set("name", JsonValue::string(string_field(choice, "name", "tool_choice"))));
  refuse_field("tool_choice",
               "must be auto, none, required or {\"type\": \"function\", \"name\": ...}" + found_kind(choice));
}

// include, prompt_cache_key and client_metadata (response_extras.h).
void read_codex_fields(const JsonValue& body, ResponseExtras& extras) {
  if (const JsonValue* v = present(body, "include")) {
    if (!v->is_array()) refuse_field("include", "must be a list" + found_kind(*v));
    for (size_t i = 0; i < v->items.size(); ++i) {
      const JsonValue& what = v->items[i];
      if (!what.is_string() || what.text != "reasoning.encrypted_content")
        refuse_field("include[" + std::to_string(i) + "]",
                     "only \"reasoning.encrypted_content\" is served" +
                         (what.is_string() ? " (found \"" + what.text + "\")" : found_kind(what)));
      extras.encrypted_reasoning = true;
    }
  }
  if (const JsonValue* v = present(body, "prompt_cache_key"); v && !v->is_string())
    refuse_field("prompt_cache_key", "must be a string" + found_kind(*v));
  if (const JsonValue* v = present(body, "client_metadata"); v && !v->is_object())
    refuse_field("client_metadata", "must be an object" + found_kind(*v));
}

// reasoning: effort -> the chat request's reasoning_effort; summary checked
// (the summary is the reasoning text whichever is asked for).
void read_reasoning(const JsonValue& v, JsonValue& chat) {
  if (!v.is_object()) refuse_field("reasoning", "must be an object" + found_kind(v));
  for (size_t i = 0; i < v.keys.size(); ++i)
    if (v.keys[i] == "effort") {
      if (!v.items[i].is_null()) chat.set("reasoning_effort", v.items[i]);
    } else if (v.keys[i] == "summary") {
      const JsonValue& summary = v.items[i];
      if (!summary.is_null() &&
          !(summary.is_string() && (summary.text == "auto" || summary.text == "concise" || summary.text == "detailed")))
        refuse_field("reasoning.summary", "must be auto, concise, detailed or null" + found_kind(summary));
    } else {
      refuse_field("reasoning." + v.keys[i], "is not supported (effort and summary are)");
    }
}

// The conversation: previous_response_id's kept one, the instructions
// first, then the input.
void read_conversation(const JsonValue& body, const ResponseStore& store, ResponsesRequest& out) {
  JsonValue& messages = out.messages = JsonValue::array();
  if (const JsonValue* v = present(body, "previous_response_id")) {
    if (!v->is_string()) refuse_field("previous_response_id", "must be a string" + found_kind(*v));
    std::optional<JsonValue> before = store.find(v->text);
    if (!before)
      throw ApiError(404,
                     "previous_response_id: \"" + v->text + "\" is not kept here (sent with store: false, " +
                         "or made before this server started)",
                     "previous_response_id", "previous_response_not_found");
    out.previous_response_id = v->text;
    messages = std::move(*before);
  }
  if (const JsonValue* v = present(body, "instructions")) {
    if (!v->is_string()) refuse_field("instructions", "must be a string" + found_kind(*v));
    // Instructions are not carried over from the previous response (as OpenAI's): they come first in this one.
    if (!messages.items.empty() && messages.items[0].find("role")->text == "system")
      messages.items.erase(messages.items.begin());
    messages.items.insert(messages.items.begin(), JsonValue::object().set("role", "system").set("content", *v));
  }
  const JsonValue* input = present(body, "input");
  if (!input) refuse_field("input", "missing (a string or a list of items)");
  if (input->is_string()) messages.push(JsonValue::object().set("role", "user").set("content", *input));
  else if (input->is_array()) add_items(*input, messages);
  else refuse_field("input", "must be a string or a list of items" + found_kind(*input));
  if (messages.items.empty()) refuse_field("input", "must hold at least one item");
}

}  // namespace

ResponsesRequest parse_responses_request(std::string_view text, const RequestLimits& limits, const ResponseStore& store,
                                         bool omit_hosted_tools) {
  if (json_depth(text, limits.max_depth) > limits.max_depth)
    throw ApiError(400, "request body: nested deeper than " + std::to_string(limits.max_depth) + " levels", "",
                   "too_deep");
  JsonValue body;
  std::string error;
  if (!parse_json(text, body, error)) throw ApiError(400, "request body: not valid JSON (" + error + ")");
  if (!body.is_object()) throw ApiError(400, "request body: must be a JSON object" + found_kind(body));
  // Fields passed to the chat request as they are (checked there, same names).
  static const std::set<std::string, std::less<>> kSame = {"model",
                                                           "temperature",
                                                           "top_p",
                                                           "top_k",
                                                           "min_p",
                                                           "repetition_penalty",
                                                           "repeat_last_n",
                                                           "presence_penalty",
                                                           "frequency_penalty",
                                                           "seed",
                                                           "user",
                                                           "metadata"};
  static const std::set<std::string, std::less<>> kOwn = {
      "input",       "instructions",       "previous_response_id", "store", "stream",           "tools",
      "tool_choice", "reasoning",          "max_output_tokens",    "text",  "prompt_cache_key", "client_metadata",
      "include",     "parallel_tool_calls"};
  ResponsesRequest out;
  out.chat = JsonValue::object();
  for (size_t i = 0; i < body.keys.size(); ++i) {
    const std::string& key = body.keys[i];
    if (kSame.contains(key)) out.chat.set(key, body.items[i]);
    else if (!kOwn.contains(key))
      refuse_field(key, "is not supported by k3-serve's /v1/responses (docs/serve.md lists the fields served)");
  }
  read_conversation(body, store, out);
  out.chat.set("messages", out.messages);

  if (const JsonValue* v = present(body, "tools"); v && !(v->is_array() && v->items.empty()))
    if (JsonValue tools = chat_tools(*v, omit_hosted_tools, out.extras); !tools.items.empty())
      out.chat.set("tools", std::move(tools));
  read_codex_fields(body, out.extras);
  if (const JsonValue* v = present(body, "tool_choice")) out.chat.set("tool_choice", chat_tool_choice(*v));
  if (const JsonValue* v = present(body, "reasoning")) read_reasoning(*v, out.chat);
  if (const JsonValue* v = present(body, "max_output_tokens")) out.chat.set("max_tokens", *v);
  if (const JsonValue* v = present(body, "parallel_tool_calls"); v && !(v->is_bool() && v->boolean))
    refuse_field("parallel_tool_calls", "only true is served (K3 may call several tools in one reply)");
  if (const JsonValue* v = present(body, "text")) {
    const JsonValue* format = v->is_object() ? present(*v, "format") : nullptr;
    if (!v->is_object() || (format && !(format->find("type") && format->find("type")->text == "text")))
      refuse_field("text", "only {\"format\": {\"type\": \"text\"}} is served");
  }
  auto flag = [&](const char* key, bool& target) {
    if (const JsonValue* v = present(body, key)) {
      if (!v->is_bool()) refuse_field(key, "must be true or false" + found_kind(*v));
      target = v->boolean;
    }
  };
  flag("store", out.store);
  flag("stream", out.stream);
  return out;
}

}  // namespace k3::serve
