#include "serve/anthropic_messages.h"

#include <initializer_list>
#include <set>
#include <string>

#include "serve/api_error.h"
#include "serve/request_fields.h"

namespace k3::serve {

namespace {

const JsonValue& string_member(const JsonValue& obj, const char* key, const std::string& path) {
  const JsonValue* v = obj.find(key);
  if (!v) refuse_field(path + "." + key, "missing");
  if (!v->is_string()) refuse_field(path + "." + key, "must be a string" + found_kind(*v));
  return *v;
}

// cache_control: accepted (a hint; k3 keeps states without being asked) when well-formed.
void check_cache_control(const JsonValue& block, const std::string& path) {
  const JsonValue* cc = block.find("cache_control");
  if (!cc || cc->is_null()) return;
  if (!cc->is_object()) refuse_field(path + ".cache_control", "must be an object" + found_kind(*cc));
  only_keys(*cc, path + ".cache_control", {"type", "ttl"});
  const JsonValue& type = string_member(*cc, "type", path + ".cache_control");
  if (type.text != "ephemeral") refuse_field(path + ".cache_control.type", "must be \"ephemeral\"");
}

const JsonValue& block_at(const JsonValue& blocks, size_t j, const std::string& path, std::string& type) {
  const JsonValue& b = blocks.items[j];
  if (!b.is_object()) refuse_field(path, "must be a content block object" + found_kind(b));
  type = string_member(b, "type", path).text;
  check_cache_control(b, path);
  return b;
}

// A text block's text (its citations must be absent: k3 writes none and reads none).
std::string text_of(const JsonValue& b, const std::string& path) {
  only_keys(b, path, {"type", "text", "cache_control", "citations"});
  if (const JsonValue* c = b.find("citations"); c && !c->is_null() && !(c->is_array() && c->items.empty()))
    refuse_field(path + ".citations", "is not supported");
  return string_member(b, "text", path).text;
}

[[noreturn]] void refuse_block(const std::string& path, const std::string& type, const char* allowed) {
  refuse_field(path + ".type", "\"" + type + "\" blocks are not supported here (" + allowed + ")");
}

// A string, or a list of text blocks, as text parts.
JsonValue text_parts(const JsonValue& content, const std::string& path) {
  if (content.is_string()) return JsonValue::string(content.text);
  if (!content.is_array()) refuse_field(path, "must be a string or a list of text blocks" + found_kind(content));
  JsonValue parts;
  parts.kind = JsonValue::Kind::kArray;
  for (size_t j = 0; j < content.items.size(); ++j) {
    const std::string bp = path + "[" + std::to_string(j) + "]";
    std::string type;
    const JsonValue& b = block_at(content, j, bp, type);
    if (type != "text") refuse_block(bp, type, "text");
    parts.push(JsonValue::object().set("type", "text").set("text", text_of(b, bp)));
  }
  return parts;
}

// A tool_result block -> a tool message.
JsonValue tool_message(const JsonValue& b, const std::string& path, const std::set<std::string>& call_ids) {
  only_keys(b, path, {"type", "tool_use_id", "content", "is_error", "cache_control"});
  const std::string& id = string_member(b, "tool_use_id", path).text;
  if (!call_ids.count(id))
    refuse_field(path + ".tool_use_id",
                 "\"" + id + "\" answers no tool_use block of the assistant message before this one");
  bool is_error = false;
  if (const JsonValue* e = b.find("is_error"); e && !e->is_null()) {
    if (!e->is_bool()) refuse_field(path + ".is_error", "must be true or false" + found_kind(*e));
    is_error = e->boolean;
  }
  JsonValue content = JsonValue::string("");
  if (const JsonValue* c = b.find("content"); c && !c->is_null()) content = text_parts(*c, path + ".content");
  if (is_error) {  // K3's format has no error flag: the model reads it as the result's first words
    JsonValue parts;
    parts.kind = JsonValue::Kind::kArray;
    parts.push(JsonValue::object().set("type", "text").set("text", "Error: "));
    if (content.is_string()) parts.push(JsonValue::object().set("type", "text").set("text", content.text));
    else
      for (JsonValue& p : content.items) parts.push(std::move(p));
    content = std::move(parts);
  }
  return JsonValue::object().set("role", "tool").set("tool_call_id", id).set("content", std::move(content));
}

// A user message: its tool results first (as Anthropic requires), then its text.
void user_message(const JsonValue& m, const std::string& path, const std::set<std::string>& call_ids, JsonValue& out) {
  const JsonValue* content = m.find("content");
  const std::string cp = path + ".content";
  if (content->is_string()) {
    out.push(JsonValue::object().set("role", "user").set("content", content->text));
    return;
  }
  if (!content->is_array()) refuse_field(cp, "must be a string or a list of content blocks" + found_kind(*content));
  JsonValue parts;
  parts.kind = JsonValue::Kind::kArray;
  for (size_t j = 0; j < content->items.size(); ++j) {
    const std::string bp = cp + "[" + std::to_string(j) + "]";
    std::string type;
    const JsonValue& b = block_at(*content, j, bp, type);
    if (type == "text") {
      parts.push(JsonValue::object().set("type", "text").set("text", text_of(b, bp)));
    } else if (type == "tool_result") {
      if (!parts.items.empty()) refuse_field(bp, "tool_result blocks must come before the message's text");
      out.push(tool_message(b, bp, call_ids));
    } else {
      refuse_block(bp, type, "a user message holds text and tool_result blocks");
    }
  }
  if (content->items.empty()) refuse_field(cp, "must hold at least one content block");
  if (!parts.items.empty()) out.push(JsonValue::object().set("role", "user").set("content", std::move(parts)));
}

// An assistant message; `call_ids` becomes its tool_use ids.
void assistant_message(const JsonValue& m, const std::string& path, std::set<std::string>& call_ids, JsonValue& out) {
  call_ids.clear();
  const JsonValue* content = m.find("content");
  const std::string cp = path + ".content";
  JsonValue msg = JsonValue::object().set("role", "assistant");
  if (content->is_string()) {
    out.push(msg.set("content", content->text));
    return;
  }
  if (!content->is_array()) refuse_field(cp, "must be a string or a list of content blocks" + found_kind(*content));
  JsonValue parts, calls;
  parts.kind = calls.kind = JsonValue::Kind::kArray;
  std::string reasoning;
  bool thought = false;
  for (size_t j = 0; j < content->items.size(); ++j) {
    const std::string bp = cp + "[" + std::to_string(j) + "]";
    std::string type;
    const JsonValue& b = block_at(*content, j, bp, type);
    if (type == "text") {
      parts.push(JsonValue::object().set("type", "text").set("text", text_of(b, bp)));
    } else if (type == "thinking") {  // carried back: the reasoning of this turn (its signature is not checked)
      only_keys(b, bp, {"type", "thinking", "signature", "cache_control"});
      reasoning += string_member(b, "thinking", bp).text;
      thought = true;
    } else if (type == "tool_use") {
      only_keys(b, bp, {"type", "id", "name", "input", "cache_control"});
      const std::string& id = string_member(b, "id", bp).text;
      const JsonValue* input = b.find("input");
      if (!input || !input->is_object())
        refuse_field(bp + ".input", "must be an object" + (input ? found_kind(*input) : std::string(" (missing)")));
      call_ids.insert(id);
      JsonValue fn = JsonValue::object().set("name", string_member(b, "name", bp).text).set("arguments", *input);
      calls.push(JsonValue::object().set("id", id).set("type", "function").set("function", std::move(fn)));
    } else {
      refuse_block(bp, type, "an assistant message holds text, thinking and tool_use blocks");
    }
  }
  msg.set("content", std::move(parts));
  if (thought) msg.set("reasoning_content", reasoning);
  if (!calls.items.empty()) msg.set("tool_calls", std::move(calls));
  out.push(std::move(msg));
}

JsonValue messages_json(const JsonValue& body) {
  JsonValue out;
  out.kind = JsonValue::Kind::kArray;
  if (const JsonValue* system = body.find("system"); system && !system->is_null())
    out.push(JsonValue::object().set("role", "system").set("content", text_parts(*system, "system")));
  const JsonValue* messages = body.find("messages");
  if (!messages) refuse_field("messages", "missing (a list of messages)");
  if (!messages->is_array()) refuse_field("messages", "must be a list of messages" + found_kind(*messages));
  if (messages->items.empty()) refuse_field("messages", "must hold at least one message");
  std::set<std::string> call_ids;  // the tool_use ids of the last assistant message
  for (size_t i = 0; i < messages->items.size(); ++i) {
    const std::string path = "messages[" + std::to_string(i) + "]";
    const JsonValue& m = messages->items[i];
    if (!m.is_object()) refuse_field(path, "must be an object {\"role\": ..., \"content\": ...}" + found_kind(m));
    only_keys(m, path, {"role", "content"});
    const std::string& role = string_member(m, "role", path).text;
    if (!m.find("content")) refuse_field(path + ".content", "missing");
    if (role == "user") {
      user_message(m, path, call_ids, out);
      call_ids.clear();
    } else if (role == "assistant") {
      if (i + 1 == messages->items.size())
        refuse_field(path,
                     "the last message must be the user's (continuing a partial assistant reply is not supported)");
      assistant_message(m, path, call_ids, out);
    } else if (role == "system") {  // a system message in the conversation (the current API's; Claude Code sends them)
      out.push(
          JsonValue::object().set("role", "system").set("content", text_parts(*m.find("content"), path + ".content")));
    } else {
      refuse_field(path + ".role", "\"" + role + "\" is not a role here (user, assistant or system)");
    }
  }
  return out;
}

JsonValue tools_json(const JsonValue& tools) {
  if (!tools.is_array()) refuse_field("tools", "must be a list of tools" + found_kind(tools));
  JsonValue out;
  out.kind = JsonValue::Kind::kArray;
  for (size_t i = 0; i < tools.items.size(); ++i) {
    const std::string path = "tools[" + std::to_string(i) + "]";
    const JsonValue& t = tools.items[i];
    if (!t.is_object()) refuse_field(path, "must be an object" + found_kind(t));
    if (const JsonValue* type = t.find("type");
        type && !type->is_null() && !(type->is_string() && type->text == "custom"))
      refuse_field(path + ".type", (type->is_string() ? "\"" + type->text + "\"" : std::string("this type")) +
                                       " is not supported (only custom tools, with an input_schema)");
    only_keys(t, path, {"type", "name", "description", "input_schema", "cache_control"});
    check_cache_control(t, path);
    JsonValue fn = JsonValue::object().set("name", string_member(t, "name", path).text);
    if (const JsonValue* d = t.find("description"); d && !d->is_null())
      fn.set("description", string_member(t, "description", path).text);
    const JsonValue* schema = t.find("input_schema");
    if (!schema || !schema->is_object())
      refuse_field(path + ".input_schema",
                   "must be a JSON Schema object" + (schema ? found_kind(*schema) : " (missing)"));
    fn.set("parameters", *schema);
    out.push(JsonValue::object().set("type", "function").set("function", std::move(fn)));
  }
  return out;
}

JsonValue tool_choice_json(const JsonValue& choice, const JsonValue* tools) {
  if (!choice.is_object()) refuse_field("tool_choice", "must be an object with a \"type\"" + found_kind(choice));
  only_keys(choice, "tool_choice", {"type", "name", "disable_parallel_tool_use"});
  if (const JsonValue* d = choice.find("disable_parallel_tool_use"); d && !d->is_null()) {
    if (!d->is_bool()) refuse_field("tool_choice.disable_parallel_tool_use", "must be true or false" + found_kind(*d));
    if (d->boolean)
      refuse_field("tool_choice.disable_parallel_tool_use",
                   "true is not supported (K3 may call several tools at once)");
  }
  const std::string& type = string_member(choice, "type", "tool_choice").text;
  if (type == "auto" || type == "none") return JsonValue::string(type);
  if (type == "any") return JsonValue::string("required");
  if (type != "tool") refuse_field("tool_choice.type", "\"" + type + "\" is not one of auto, any, tool, none");
  const std::string& name = string_member(choice, "name", "tool_choice").text;
  bool declared = false;
  if (tools && tools->is_array())
    for (const JsonValue& t : tools->items)
      if (const JsonValue* n = t.find("name"); n && n->is_string() && n->text == name) declared = true;
  if (!declared) refuse_field("tool_choice.name", "\"" + name + "\" is not one of the request's tools");
  return JsonValue::object().set("type", "function").set("function", JsonValue::object().set("name", name));
}

}  // namespace

JsonValue anthropic_chat_json(const JsonValue& body) {
  JsonValue req = JsonValue::object();
  req.set("messages", messages_json(body));
  const JsonValue* tools = body.find("tools");
  if (tools && !tools->is_null()) req.set("tools", tools_json(*tools));
  if (const JsonValue* choice = body.find("tool_choice"); choice && !choice->is_null())
    req.set("tool_choice", tool_choice_json(*choice, tools));
  return req;
}

}  // namespace k3::serve
