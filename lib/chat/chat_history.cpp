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

std::string history_text(const std::vector<JsonValue>& messages) {
  std::string text;
  for (const JsonValue& m : messages) text += python_json_dumps(m) + "\n";
  return text;
}

}  // namespace

void for_each_message_line(std::string_view text, const std::function<bool(size_t, std::string_view)>& visit) {
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

std::vector<JsonValue> load_chat_history(const std::string& path) {
  std::vector<JsonValue> out;
  if (!file_exists(path)) return out;
  const std::string text = read_text_file(path, kMaxWholeReadBytes, ExitCode::kBadInput);
  for_each_message_line(text, [&](size_t line_no, std::string_view line) {
    JsonValue v;
    std::string error;
    if (!parse_json(line, v, error))
      throw Error(ExitCode::kBadInput, path + " line " + std::to_string(line_no) + ": not JSON (" + error +
                                           "); a history holds one message object per line");
    if (!v.is_object())
      throw Error(ExitCode::kBadInput, path + " line " + std::to_string(line_no) + ": a message must be a JSON object");
    out.push_back(std::move(v));
    return true;
  });
  return out;
}

void write_chat_history(const std::string& path, const std::vector<JsonValue>& messages) {
  const std::string text = history_text(messages);
  write_file_atomic(path, text.data(), text.size());
}

ChatHistoryFile::ChatHistoryFile(std::string path) : path_(std::move(path)) { open(); }

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
  write_chat_history(path_, messages);
  open();
}

}  // namespace k3
