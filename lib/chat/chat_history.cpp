#include "chat/chat_history.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "chat/python_json.h"
#include "common/error.h"
#include "common/file.h"

namespace k3 {

namespace {

constexpr const char* kSettingsKey = "k3_chat_settings";

std::string history_text(const std::vector<JsonValue>& messages) {
  std::string text;
  for (const JsonValue& m : messages) text += python_json_dumps(m) + "\n";
  return text;
}

JsonValue settings_line(const ChatThinkingSetting& setting) {
  JsonValue values = JsonValue::object();
  values.set("thinking", setting.thinking ? "on" : "off");
  values.set("effort", setting.effort ? *setting.effort : std::string("none"));
  JsonValue line = JsonValue::object();
  line.set(kSettingsKey, std::move(values));
  return line;
}

// Reads a settings line; Error(kBadInput) naming `where` for values k3-chat does not take.
ChatThinkingSetting read_settings_line(const JsonValue& line, const std::string& where) {
  const JsonValue& values = *line.find(kSettingsKey);
  const JsonValue* thinking = values.find("thinking");
  const JsonValue* effort = values.find("effort");
  const auto is = [](const JsonValue* v, std::initializer_list<const char*> allowed) {
    if (!v || !v->is_string()) return false;
    for (const char* a : allowed)
      if (v->text == a) return true;
    return false;
  };
  if (!is(thinking, {"on", "off"}) || !is(effort, {"low", "high", "max", "none"}))
    throw Error(ExitCode::kBadInput, where + ": " + kSettingsKey +
                                         " must be {\"thinking\": \"on\"|\"off\", \"effort\": "
                                         "\"low\"|\"high\"|\"max\"|\"none\"}");
  ChatThinkingSetting s;
  s.thinking = thinking->text == "on";
  if (effort->text != "none") s.effort = effort->text;
  return s;
}

// Every line of `text` that is not blank: `visit(line_no, line)` (1-based) until it returns false.
void for_each_filled_line(std::string_view text, const std::function<bool(size_t, std::string_view)>& visit) {
  size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    ++line_no;
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    const std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (!visit(line_no, line)) return;
  }
}

// Each line of `path` that is not blank, parsed: `visit(line_no, value)`.
// Error(kBadInput) naming the line for one that is not a JSON object.
void for_each_history_line(const std::string& path, const std::function<void(size_t, const JsonValue&)>& visit) {
  if (!file_exists(path)) return;
  const std::string text = read_text_file(path, kMaxWholeReadBytes, ExitCode::kBadInput);
  for_each_filled_line(text, [&](size_t line_no, std::string_view line) {
    JsonValue v;
    std::string error;
    if (!parse_json(line, v, error))
      throw Error(ExitCode::kBadInput, path + " line " + std::to_string(line_no) + ": not JSON (" + error +
                                           "); a history holds one message object per line");
    if (!v.is_object())
      throw Error(ExitCode::kBadInput, path + " line " + std::to_string(line_no) + ": a message must be a JSON object");
    visit(line_no, v);
    return true;
  });
}

}  // namespace

bool is_chat_settings_line(const JsonValue& line) {
  const JsonValue* values = line.find(kSettingsKey);
  return values && values->is_object() && !line.find("role");
}

void for_each_message_line(std::string_view text, const std::function<bool(size_t, std::string_view)>& visit) {
  for_each_filled_line(text, [&](size_t line_no, std::string_view line) {
    JsonValue v;
    std::string error;
    if (parse_json(line, v, error) && is_chat_settings_line(v)) return true;
    return visit(line_no, line);
  });
}

std::vector<JsonValue> load_chat_history(const std::string& path) {
  std::vector<JsonValue> out;
  for_each_history_line(path, [&](size_t line_no, const JsonValue& v) {
    if (!is_chat_settings_line(v)) return out.push_back(v);
    read_settings_line(v, path + " line " + std::to_string(line_no));  // refused here, before any weight is read
  });
  return out;
}

std::optional<ChatThinkingSetting> load_chat_settings(const std::string& path) {
  std::optional<ChatThinkingSetting> last;
  for_each_history_line(path, [&](size_t line_no, const JsonValue& v) {
    if (is_chat_settings_line(v)) last = read_settings_line(v, path + " line " + std::to_string(line_no));
  });
  return last;
}

void write_chat_history(const std::string& path, const std::vector<JsonValue>& messages) {
  const std::string text = history_text(messages);
  write_file_atomic(path, text.data(), text.size());
}

ChatHistoryFile::ChatHistoryFile(std::string path) : path_(std::move(path)) {
  open();
  settings_ = load_chat_settings(path_);
}

ChatHistoryFile::~ChatHistoryFile() {
  if (fd_ >= 0) ::close(fd_);
}

void ChatHistoryFile::open() {
  // Read too: append() looks at the last byte.
  fd_ = ::open(path_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int e = errno;
    throw Error(ExitCode::kIo, "cannot open the history " + path_ + ": " +
                                   (e == ELOOP ? std::string("it is a symbolic link (give the file itself)")
                                               : std::string(std::strerror(e))));
  }
}

void ChatHistoryFile::keep_settings(const ChatThinkingSetting& setting) {
  settings_ = setting;
  append(settings_line(setting));
}

void ChatHistoryFile::append(const JsonValue& message) {
  const std::string what = "the history " + path_;
  std::string line = python_json_dumps(message) + "\n";
  // A last line without its line end would join this message's line.
  const struct stat st = stat_open_file(fd_, path_);
  char last = '\n';
  if (st.st_size > 0 && ::pread(fd_, &last, 1, st.st_size - 1) != 1)
    throw Error(ExitCode::kIo, "cannot read " + what + ": " + std::strerror(errno));
  if (last != '\n') line.insert(line.begin(), '\n');
  write_all(fd_, line, what);
}

bool ChatHistoryFile::is(const std::string& path) const {
  struct stat other {};
  if (::stat(path.c_str(), &other) != 0) return false;
  const struct stat mine = stat_open_file(fd_, path_);
  return other.st_dev == mine.st_dev && other.st_ino == mine.st_ino;
}

void ChatHistoryFile::rewrite(const std::vector<JsonValue>& messages) {
  ::close(fd_);
  fd_ = -1;
  std::vector<JsonValue> lines;
  if (settings_) lines.push_back(settings_line(*settings_));
  lines.insert(lines.end(), messages.begin(), messages.end());
  write_chat_history(path_, lines);
  open();
}

}  // namespace k3
