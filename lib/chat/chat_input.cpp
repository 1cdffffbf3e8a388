#include "chat/chat_input.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "chat/line_editor.h"
#include "common/error.h"

namespace k3 {

namespace {

std::string trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

bool is_command(const std::string& line) { return line.size() >= 2 && line[0] == '/' && line[1] != '/'; }

UserInput command(const std::string& line) {
  UserInput in;
  in.kind = UserInput::kCommand;
  const size_t sp = line.find_first_of(" \t");
  in.text = line.substr(1, sp == std::string::npos ? std::string::npos : sp - 1);
  if (sp != std::string::npos) in.argument = trim(std::string_view(line).substr(sp));
  return in;
}

// "//x" is the message "/x".
std::string unescape(const std::string& line) { return line.rfind("//", 0) == 0 ? line.substr(1) : line; }

}  // namespace

UserInputReader::UserInputReader(int fd, bool interactive, std::function<bool()> interrupted)
    : fd_(fd), interactive_(interactive), interrupted_(std::move(interrupted)) {}

bool UserInputReader::read_line(std::string& line, bool more) {
  if (unread_) {
    unread_ = false;
    line = std::move(unread_line_);
    return true;
  }
  if (editor_) return editor_->read(more ? "... " : "> ", line);
  while (true) {
    const size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return true;
    }
    if (eof_) {
      if (buffer_.empty()) return false;
      line = std::move(buffer_);
      buffer_.clear();
      return true;
    }
    char buf[4096];
    const ssize_t r = ::read(fd_, buf, sizeof buf);
    if (r < 0) {
      if (errno == EINTR) {
        if (interrupted_ && interrupted_()) return false;
        continue;
      }
      throw Error(ExitCode::kIo, std::string("cannot read stdin: ") + std::strerror(errno));
    }
    if (r == 0) eof_ = true;
    buffer_.append(buf, static_cast<size_t>(r));
  }
}

UserInput UserInputReader::next() {
  std::string line;
  while (true) {
    if (!read_line(line)) return UserInput{};
    if (is_command(line)) {
      if (editor_) editor_->remember(trim(line));
      UserInput in = command(trim(line));
      if (in.text == "send") continue;  // ends a message; nothing to send here
      return in;
    }
    if (!trim(line).empty()) break;  // blank lines between messages are skipped
  }
  std::string text;
  if (interactive_) {
    if (trim(line) == "\"\"\"") {
      std::string more;
      while (read_line(more, true) && trim(more) != "\"\"\"") text += more + "\n";
    } else {
      text = unescape(line);
      while (!text.empty() && text.back() == '\\') {
        text.back() = '\n';
        if (!read_line(line, true)) break;
        text += line;
      }
    }
  } else {
    text = unescape(line);
    std::string more;
    while (read_line(more)) {
      if (is_command(more)) {
        if (trim(more) != "/send") {
          unread_ = true;  // the command runs after this message
          unread_line_ = std::move(more);
        }
        break;
      }
      text += "\n" + more;
    }
  }
  UserInput in;
  in.kind = UserInput::kMessage;
  in.text = trim(text);
  if (editor_) editor_->remember(in.text);
  return in;
}

}  // namespace k3
