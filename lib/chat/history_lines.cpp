#include "chat/history_lines.h"

#include <regex>

#include "chat/chat_history.h"
#include "chat/chat_session.h"
#include "common/error.h"
#include "common/file.h"

namespace k3 {

std::vector<JsonValue> load_checked_history(const std::string& path) {
  std::vector<JsonValue> history = load_chat_history(path);
  try {
    check_chat_messages(history);
  } catch (const Error& e) {
    throw Error(e.code(), path + ": " + name_history_line(path, e.what()));
  }
  return history;
}

std::string name_history_line(const std::string& path, const std::string& message) {
  static const std::regex kMessage(R"((request: )?messages\[([0-9]+)\]\.?)");
  std::smatch m;
  if (!std::regex_search(message, m, kMessage)) return message;
  const size_t wanted = std::stoul(m[2].str());
  std::string text;
  try {
    text = read_text_file(path, kMaxWholeReadBytes, ExitCode::kBadInput);
  } catch (const Error&) {
    return message;
  }
  // The walk load_chat_history reads by, so the index names the same message.
  size_t index = 0;
  std::string out = message;
  for_each_message_line(text, [&](size_t line_no, std::string_view) {
    if (index++ != wanted) return true;
    // "messages[1].role: x" -> "line 2: role: x"; "messages[1]: x" -> "line 2: x".
    const std::string field = m.str().back() == '.' ? ": " : "";
    out = m.prefix().str() + "line " + std::to_string(line_no) + field + m.suffix().str();
    return false;
  });
  return out;
}

}  // namespace k3
