// What the user types into a chat, read from a terminal or a script.
//
// Commands are lines starting with "/" (/reset, /save FILE, /effort E,
// /think on|off, /exit, /help; "//" starts a message with "/").
// At a terminal each line is one message; a line ending in "\" goes on on
// the next line, and a line holding only """ starts a block, up to the next
// such line, for pasting several lines. From a script (stdin not a
// terminal), the lines up to the next command (or "/send", or the end) are
// one message, so a file holding one question is one turn.
#pragma once

#include <functional>
#include <string>

namespace k3 {

class LineEditor;

struct UserInput {
  enum Kind { kMessage, kCommand, kEnd } kind = kEnd;
  std::string text;      // kMessage: the message; kCommand: the command word, e.g. "effort"
  std::string argument;  // kCommand: the rest of the line, trimmed
};

class UserInputReader {
 public:
  // `interrupted` is asked when a read is interrupted by a signal: true ends
  // the input (Ctrl-C at the prompt).
  UserInputReader(int fd, bool interactive, std::function<bool()> interrupted);
  UserInput next();
  bool interactive() const { return interactive_; }

  // At a terminal: lines come from `editor` (editing, earlier inputs), which
  // shows the prompts itself ("> ", then "... " on a message's further
  // lines); sent messages are added to its history. Null: plain reads.
  void use_editor(LineEditor* editor) { editor_ = editor; }
  bool edits_lines() const { return editor_ != nullptr; }

 private:
  bool read_line(std::string& line, bool more = false);  // false at the end of input
  bool unread_ = false;
  std::string unread_line_;
  int fd_;
  bool interactive_;
  std::function<bool()> interrupted_;
  LineEditor* editor_ = nullptr;
  std::string buffer_;
  bool eof_ = false;
};

}  // namespace k3
