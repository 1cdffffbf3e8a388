#include "chat/xtml_renderer.h"

#include <algorithm>
#include <optional>

#include "chat/python_json.h"
#include "common/error.h"

namespace k3 {

namespace {

constexpr std::string_view kToolsHeader =
    "# Tools\nHere are the available tools, described in JSONSchema.\n\n```json\n";
constexpr std::string_view kNewToolsHeader =
    "## New Tools Available\nThe system dynamically extends the toolset via lazy-loading.\n"
    "You have access to all existing and extended tools.\nHere are the specs for the extended tools.\n\n```json\n";
constexpr std::string_view kEffortText =
    "`thinking_effort` guides on how much to think in your thinking channel (not including the response "
    "channel), supported values include `low`, `medium`, `high`, and `max`.\nNow the system is invoked with "
    "`thinking_effort=";
// Followed by the format's name (json_object or json_schema).
constexpr std::string_view kResponseFormatText = "The system is invoked with `response_format=";
constexpr std::string_view kResponseFormatRule =
    "`.\nYour response must be raw JSON data without markdown code blocks (```json) or any additional formatting.";

std::string tools_body(std::string_view header, const JsonValue& tools) {
  return std::string(header) + sorted_compact_json(tools) + "\n```";
}

void write_content(XtmlWriter& w, const ChatMessage& m) {
  for (const std::string& part : m.content) w.text(part);
}

void open_message(XtmlWriter& w, std::string_view role, const std::optional<std::string>& name) {
  if (name) w.open("message", {{"role", role}, {"name", *name}});
  else w.open("message", {{"role", role}});
}

void write_assistant(XtmlWriter& w, const ChatMessage& m, bool thinking) {
  open_message(w, "assistant", m.name);
  if (thinking) {
    w.open("think");
    if (m.reasoning_content && !python_strip(*m.reasoning_content).empty()) w.text(*m.reasoning_content);
    w.close("think");
  }
  w.open("response");
  write_content(w, m);
  w.close("response");
  if (!m.tool_calls.empty()) {
    w.open("tools");
    for (size_t i = 0; i < m.tool_calls.size(); ++i) {
      const ToolCall& call = m.tool_calls[i];
      const std::string index = std::to_string(i + 1);
      w.open("call", {{"tool", call.name}, {"index", index}});
      if (call.raw) {
        w.open("json", {{"type", "object"}});
        w.text(call.raw_arguments);
        w.close("json");
      } else {
        for (size_t a = 0; a < call.arguments.keys.size(); ++a) {
          const JsonValue& value = call.arguments.items[a];
          w.open("argument", {{"key", call.arguments.keys[a]}, {"type", argument_type(value)}});
          w.text(argument_text(value));
          w.close("argument");
        }
      }
      w.close("call");
    }
    w.close("tools");
  }
  w.close("message");
  w.end();
}

// Index of the call of `calls` with this id, or -1.
ptrdiff_t call_index(const std::vector<ToolCall>& calls, const std::optional<std::string>& id) {
  if (!id) return -1;
  for (size_t i = 0; i < calls.size(); ++i)
    if (calls[i].id == *id) return static_cast<ptrdiff_t>(i);
  return -1;
}

}  // namespace

const char* argument_type(const JsonValue& value) {
  switch (value.kind) {
    case JsonValue::Kind::kNull: return "null";
    case JsonValue::Kind::kBool: return "boolean";
    case JsonValue::Kind::kInt:
    case JsonValue::Kind::kFloat: return "number";
    case JsonValue::Kind::kString: return "string";
    case JsonValue::Kind::kArray: return "array";
    case JsonValue::Kind::kObject: return "object";
  }
  return "null";
}

std::string argument_text(const JsonValue& value) { return value.is_string() ? value.text : python_json_dumps(value); }

namespace {

// The run of consecutive tool messages from msgs[k], each as a tool message
// numbered from `tool_index` on; put in call order when every one answers a
// call of the last assistant message. Returns the index past the run.
size_t write_tool_run(XtmlWriter& w, const std::vector<ChatMessage>& msgs, size_t k, const ChatMessage* last_assistant,
                      size_t& tool_index) {
  size_t run_end = k;
  while (run_end < msgs.size() && msgs[run_end].role == "tool") ++run_end;
  static const std::vector<ToolCall> kNoCalls;
  const std::vector<ToolCall>& calls = last_assistant ? last_assistant->tool_calls : kNoCalls;
  std::vector<std::pair<ptrdiff_t, size_t>> run;  // (call index, message index)
  bool all_match = true;
  for (size_t r = k; r < run_end; ++r) {
    ptrdiff_t c = call_index(calls, msgs[r].tool_call_id);
    all_match = all_match && c >= 0;
    run.emplace_back(c, r);
  }
  if (all_match) std::stable_sort(run.begin(), run.end(), [](auto& a, auto& b) { return a.first < b.first; });
  for (const auto& [c, r] : run) {
    const ChatMessage& t = msgs[r];
    ++tool_index;
    std::string name;
    if (all_match) name = calls[static_cast<size_t>(c)].name;
    else if (t.tool) name = *t.tool;
    else if (tool_index <= calls.size()) name = calls[tool_index - 1].name;
    else
      throw Error(ExitCode::kBadInput, "request: messages[" + std::to_string(r) +
                                           "]: a tool message needs \"tool\" or \"name\", or a tool_call_id of "
                                           "the previous assistant message's calls");
    w.open("message", {{"role", "tool"}, {"tool", name}, {"index", std::to_string(tool_index)}});
    write_content(w, t);
    w.close("message");
    w.end();
  }
  return run_end;
}

// The notes before the generation prompt: tool_choice and response_format.
void write_request_notes(XtmlWriter& w, const ChatRequest& request) {
  if (request.tool_choice == "required")
    w.note("tool-choice",
           "The system is invoked with `tool_choice=required`.\nYou MUST call tools in the next message.");
  else if (request.tool_choice == "none")
    w.note("tool-choice",
           "The system is invoked with `tool_choice=none`.\nYou MUST NOT call any tools in the next message.");
  if (request.response_format == ResponseFormat::kJsonObject) {
    w.note("response-format", std::string(kResponseFormatText) + "json_object" + std::string(kResponseFormatRule));
  } else if (request.response_format == ResponseFormat::kJsonSchema) {
    w.note("response-format", std::string(kResponseFormatText) + "json_schema" + std::string(kResponseFormatRule) +
                                  "\nThe JSON data must match the following schema:\n```json\n" +
                                  sorted_compact_json(request.response_schema) + "\n```");
  }
}

}  // namespace

RenderedChat render_chat(const ChatRequest& request) {
  XtmlWriter w;
  if (request.tools) w.note("tool-declare", tools_body(kToolsHeader, *request.tools));
  if (request.thinking && request.effort) w.note("thinking-effort", std::string(kEffortText) + *request.effort + "`.");

  const std::vector<ChatMessage>& msgs = request.messages;
  const ChatMessage* last_assistant = nullptr;
  size_t tool_index = 0;                  // tool messages since the last assistant message
  std::optional<size_t> system_segments;  // set at the first message that is not a system one
  for (size_t k = 0; k < msgs.size();) {
    const ChatMessage& m = msgs[k];
    if (!system_segments && m.role != "system") system_segments = w.size();
    if (m.role == "assistant") {
      write_assistant(w, m, request.thinking);
      last_assistant = &m;
      tool_index = 0;
      ++k;
      continue;
    }
    if (m.role != "tool") {
      if (m.role == "system" && m.tools) {
        w.note("tool-declare", tools_body(kNewToolsHeader, *m.tools));
      } else {
        open_message(w, m.role, m.name);
        write_content(w, m);
        w.close("message");
        w.end();
      }
      ++k;
      continue;
    }
    k = write_tool_run(w, msgs, k, last_assistant, tool_index);
  }

  RenderedChat out;
  out.system_segments = system_segments.value_or(w.size());
  out.prefix_segments = w.size();
  write_request_notes(w, request);
  out.generation_prompt_segment = w.size();
  if (request.add_generation_prompt) {
    w.open("message", {{"role", "assistant"}});
    w.open(request.thinking ? "think" : "response");
  }
  out.segments = std::move(w.segments());
  return out;
}

ChatPrompt encode_chat(const Tokenizer& tok, const RenderedChat& rendered) {
  ChatPrompt out;
  // Each segment is encoded alone, so a part's ids are the same whatever follows it.
  const auto encode_part = [&](size_t from, size_t to) {
    const std::vector<Segment> part(rendered.segments.begin() + static_cast<ptrdiff_t>(from),
                                    rendered.segments.begin() + static_cast<ptrdiff_t>(to));
    encode_segments(tok, part, out.ids);
    return out.ids.size();
  };
  out.system_ids = encode_part(0, rendered.system_segments);
  out.prefix_ids = encode_part(rendered.system_segments, rendered.prefix_segments);
  out.trailing_notes = rendered.generation_prompt_segment > rendered.prefix_segments;
  encode_part(rendered.prefix_segments, rendered.segments.size());
  return out;
}

}  // namespace k3
