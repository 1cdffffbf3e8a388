#include "chat/chat_request.h"

#include "chat/python_json.h"
#include "common/error.h"

namespace k3 {

namespace {

[[noreturn]] void refuse(const std::string& field, const std::string& what) {
  throw Error(ExitCode::kBadInput, "request: " + field + ": " + what);
}

std::string found(const JsonValue& v) { return std::string(" (found ") + json_kind_name(v.kind) + ")"; }

const std::string& string_field(const JsonValue& v, const std::string& field) {
  if (!v.is_string()) refuse(field, "must be a string" + found(v));
  return v.text;
}

std::optional<std::string> optional_string(const JsonValue& obj, const char* key, const std::string& path) {
  const JsonValue* v = obj.find(key);
  if (!v || v->is_null()) return std::nullopt;
  return string_field(*v, path + "." + key);
}

// content: a string, a list of {"type": "text", "text": ...} parts, or null.
std::vector<std::string> content_parts(const JsonValue& message, const std::string& path) {
  std::vector<std::string> parts;
  const JsonValue* c = message.find("content");
  if (!c || c->is_null()) return parts;
  const std::string field = path + ".content";
  if (c->is_string()) {
    parts.push_back(c->text);
    return parts;
  }
  if (!c->is_array()) refuse(field, "must be a string or a list of text parts" + found(*c));
  for (size_t j = 0; j < c->items.size(); ++j) {
    const JsonValue& part = c->items[j];
    const std::string pf = field + "[" + std::to_string(j) + "]";
    if (!part.is_object()) refuse(pf, "must be an object {\"type\": \"text\", \"text\": ...}" + found(part));
    const JsonValue* type = part.find("type");
    if (type && !(type->is_string() && type->text == "text"))
      refuse(pf + ".type",
             "only text parts are supported" + (type->is_string() ? " (found \"" + type->text + "\")" : found(*type)));
    const JsonValue* text = part.find("text");
    if (!text) refuse(pf + ".text", "missing");
    parts.push_back(string_field(*text, pf + ".text"));
  }
  return parts;
}

ToolCall tool_call(const JsonValue& call, const std::string& path) {
  if (!call.is_object()) refuse(path, "must be an object" + found(call));
  ToolCall out;
  if (auto id = optional_string(call, "id", path)) out.id = *id;
  const JsonValue* fn = call.find("function");
  if (!fn || !fn->is_object()) refuse(path + ".function", "must be an object {\"name\": ..., \"arguments\": ...}");
  const JsonValue* name = fn->find("name");
  if (!name) refuse(path + ".function.name", "missing");
  out.name = string_field(*name, path + ".function.name");
  const std::string af = path + ".function.arguments";
  const JsonValue* args = fn->find("arguments");
  if (!args || args->is_null()) {
    out.arguments = JsonValue::object();
  } else if (args->is_object()) {
    out.arguments = *args;
  } else if (args->is_string()) {
    if (args->text.empty()) {
      out.arguments = JsonValue::object();
    } else {
      JsonValue parsed;
      std::string error;
      if (!parse_json(args->text, parsed, error)) {
        out.raw = true;  // rendered as a <json> block, as the reference does
        out.raw_arguments = args->text;
      } else if (!parsed.is_object()) {
        refuse(af, std::string("the string holds ") + json_kind_name(parsed.kind) + ", not a JSON object");
      } else {
        out.arguments = std::move(parsed);
      }
    }
  } else {
    refuse(af, "must be a JSON object or a string holding one" + found(*args));
  }
  return out;
}

ChatMessage message(const JsonValue& m, const std::string& path) {
  if (!m.is_object()) refuse(path, "must be an object" + found(m));
  ChatMessage out;
  const JsonValue* role = m.find("role");
  if (!role) refuse(path + ".role", "missing (system, user, assistant or tool)");
  out.role = string_field(*role, path + ".role");
  if (out.role != "system" && out.role != "user" && out.role != "assistant" && out.role != "tool")
    refuse(path + ".role", "unknown role \"" + out.role + "\" (expected system, user, assistant or tool)");
  out.content = content_parts(m, path);
  if (out.role == "tool") {
    out.tool_call_id = optional_string(m, "tool_call_id", path);
    out.tool = optional_string(m, "tool", path);
    if (!out.tool) out.tool = optional_string(m, "name", path);
    return out;
  }
  out.name = optional_string(m, "name", path);
  if (out.role == "assistant") {
    out.reasoning_content = optional_string(m, "reasoning_content", path);
    if (const JsonValue* calls = m.find("tool_calls"); calls && !calls->is_null()) {
      if (!calls->is_array()) refuse(path + ".tool_calls", "must be a list of calls" + found(*calls));
      for (size_t i = 0; i < calls->items.size(); ++i)
        out.tool_calls.push_back(tool_call(calls->items[i], path + ".tool_calls[" + std::to_string(i) + "]"));
    }
  }
  if (out.role == "system")
    if (const JsonValue* tools = m.find("tools"); tools && !tools->is_null()) {
      if (!tools->is_array()) refuse(path + ".tools", "must be a list of tool declarations" + found(*tools));
      if (!tools->items.empty()) out.tools = *tools;
    }
  return out;
}

}  // namespace

bool is_supported_effort(std::string_view effort) { return effort == "low" || effort == "high" || effort == "max"; }

ChatRequest parse_chat_request(const JsonValue& request) {
  if (!request.is_object())
    throw Error(ExitCode::kBadInput, std::string("request: must be a JSON object with \"messages\"") + found(request));
  ChatRequest out;
  const JsonValue* messages = request.find("messages");
  if (!messages) refuse("messages", "missing (a request needs a list of messages)");
  if (!messages->is_array()) refuse("messages", "must be a list of messages" + found(*messages));
  for (size_t i = 0; i < messages->items.size(); ++i)
    out.messages.push_back(message(messages->items[i], "messages[" + std::to_string(i) + "]"));

  if (const JsonValue* tools = request.find("tools"); tools && !tools->is_null()) {
    if (!tools->is_array()) refuse("tools", "must be a list of tool declarations" + found(*tools));
    if (!tools->items.empty()) out.tools = *tools;
  }
  if (const JsonValue* thinking = request.find("thinking"); thinking && !thinking->is_null()) {
    if (!thinking->is_bool()) refuse("thinking", "must be true or false" + found(*thinking));
    out.thinking = thinking->boolean;
  }
  if (const JsonValue* effort = request.find("thinking_effort")) {
    if (effort->is_null()) {
      out.effort.reset();
    } else if (out.thinking) {
      // With thinking off the effort is ignored, whatever it holds.
      if (!effort->is_string())
        refuse("thinking_effort", "must be \"low\", \"high\", \"max\" or null" + found(*effort));
      if (!is_supported_effort(effort->text))
        refuse("thinking_effort", "\"" + effort->text + "\" is not supported (use low, high or max, or null for none)");
      out.effort = effort->text;
    }
  }
  if (const JsonValue* choice = request.find("tool_choice"); choice && !choice->is_null()) {
    if (choice->is_object()) {
      out.tool_choice = "function";  // a named function: no note
      const JsonValue* fn = choice->find("function");
      const JsonValue* name = fn ? fn->find("name") : choice->find("name");
      if (!name || !name->is_string() || name->text.empty())
        refuse("tool_choice.function.name", "missing (the name of the function to call)");
      out.tool_choice_name = name->text;
    } else if (choice->is_string() &&
               (choice->text == "auto" || choice->text == "required" || choice->text == "none")) {
      out.tool_choice = choice->text;
    } else {
      refuse("tool_choice", "must be \"auto\", \"required\", \"none\" or an object naming a function" +
                                (choice->is_string() ? " (found \"" + choice->text + "\")" : found(*choice)));
    }
  }
  if (const JsonValue* format = request.find("response_format"); format && !format->is_null()) {
    if (!format->is_object()) refuse("response_format", "must be an object with a \"type\"" + found(*format));
    const JsonValue* type = format->find("type");
    if (!type) refuse("response_format.type", "missing (text, json_object or json_schema)");
    const std::string& t = string_field(*type, "response_format.type");
    if (t == "json_object") {
      out.response_format = ResponseFormat::kJsonObject;
    } else if (t == "json_schema") {
      out.response_format = ResponseFormat::kJsonSchema;
      const JsonValue* js = format->find("json_schema");
      if (!js || js->is_null()) refuse("response_format.json_schema", "missing (the schema to follow)");
      // The schema is json_schema.schema, else json_schema.json_schema, else json_schema itself.
      const JsonValue* schema = js->find("schema");
      if (!schema) schema = js->find("json_schema");
      out.response_schema = schema ? *schema : *js;
    } else if (t != "text") {
      refuse("response_format.type", "\"" + t + "\" is not supported (text, json_object or json_schema)");
    }
  }
  if (const JsonValue* agp = request.find("add_generation_prompt"); agp && !agp->is_null()) {
    if (!agp->is_bool()) refuse("add_generation_prompt", "must be true or false" + found(*agp));
    out.add_generation_prompt = agp->boolean;
  }
  return out;
}

ChatRequest parse_chat_request(std::string_view json_text) {
  JsonValue v;
  std::string error;
  if (!parse_json(json_text, v, error)) throw Error(ExitCode::kBadInput, "request: not valid JSON (" + error + ")");
  return parse_chat_request(v);
}

JsonValue chat_message_json(const ChatMessage& m) {
  JsonValue out = JsonValue::object();
  out.set("role", JsonValue::string(m.role));
  if (m.name) out.set("name", JsonValue::string(*m.name));
  std::string content;
  for (const std::string& part : m.content) content += part;
  out.set("content", JsonValue::string(content));
  if (m.reasoning_content) out.set("reasoning_content", JsonValue::string(*m.reasoning_content));
  if (!m.tool_calls.empty()) {
    JsonValue calls;
    calls.kind = JsonValue::Kind::kArray;
    for (const ToolCall& c : m.tool_calls) {
      JsonValue fn = JsonValue::object();
      fn.set("name", JsonValue::string(c.name));
      // OpenAI's form: the arguments as a JSON string.
      fn.set("arguments", JsonValue::string(c.raw ? c.raw_arguments : python_json_dumps(c.arguments)));
      JsonValue call = JsonValue::object();
      if (!c.id.empty()) call.set("id", JsonValue::string(c.id));
      call.set("type", JsonValue::string("function"));
      call.set("function", std::move(fn));
      calls.items.push_back(std::move(call));
    }
    calls.kind = JsonValue::Kind::kArray;
    out.set("tool_calls", std::move(calls));
  }
  if (m.tool_call_id) out.set("tool_call_id", JsonValue::string(*m.tool_call_id));
  if (m.tool) out.set("name", JsonValue::string(*m.tool));
  if (m.tools) out.set("tools", *m.tools);
  return out;
}

}  // namespace k3
