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
  // The same walk as load_chat_history: blank lines hold no message.
  size_t pos = 0, line_no = 0, index = 0;
  while (pos < text.size()) {
    ++line_no;
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    const std::string_view line(text.data() + pos, eol - pos);
    pos = eol + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (index++ == wanted) {
      // "messages[1].role: x" -> "line 2: role: x"; "messages[1]: x" -> "line 2: x".
      const std::string field = m.str().back() == '.' ? ": " : "";
      return m.prefix().str() + "line " + std::to_string(line_no) + field + m.suffix().str();
    }
  }
  return message;
}

}  // namespace k3
