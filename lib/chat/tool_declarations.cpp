#include "chat/tool_declarations.h"

#include "chat/chat_request.h"
#include "common/error.h"
#include "common/file.h"

namespace k3 {

JsonValue load_tool_declarations(const std::string& path) {
  const std::string text = read_input(path, "tool declarations file");
  JsonValue tools;
  std::string why;
  if (!parse_json(text, tools, why)) throw Error(ExitCode::kBadInput, path + ": not JSON: " + why);
  if (!tools.is_array() || tools.items.empty())
    throw Error(ExitCode::kBadInput, path +
                                         ": must be a non-empty JSON array of tool declarations "
                                         "([{\"type\": \"function\", \"function\": {\"name\": ...}}])");
  // The renderer's own checks, as for a request carrying them.
  JsonValue request = JsonValue::object();
  JsonValue messages;
  messages.kind = JsonValue::Kind::kArray;
  request.set("messages", messages);
  request.set("tools", tools);
  try {
    parse_chat_request(request);
  } catch (const Error& e) {
    throw Error(ExitCode::kBadInput, path + ": " + e.what());
  }
  return tools;
}

}  // namespace k3
