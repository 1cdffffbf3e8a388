// Reading a chat's input lines at a terminal with line editing (libedit):
// arrow keys, Home/End, word moves and deletes (emacs keys), and Up/Down
// through earlier inputs, which are kept in a file across runs. Ctrl-D on an
// empty line ends the input; Ctrl-C ends the line being read when the
// `interrupted` check says so (the chat then stops, as it does without
// editing). Only for a terminal: from a script the input is read plainly
// (chat_input.h), so no escape sequence ever becomes message text.
#pragma once

#include <functional>
#include <string>

typedef struct editline EditLine;
typedef struct history History;

namespace k3 {

// Where k3-chat keeps the inputs typed at a terminal: $K3_CHAT_INPUTS when
// set ("" keeps none), else $XDG_STATE_HOME/k3/chat-inputs, else
// ~/.local/state/k3/chat-inputs (the directory is created, private).
std::string default_input_history_path();

class LineEditor {
 public:
  // `history_file`: where earlier inputs are loaded from and saved to ("" to
  // keep none); a missing file is a new history. fd 0/1/2 are the terminal.
  LineEditor(std::string history_file, std::function<bool()> interrupted);
  ~LineEditor();
  LineEditor(const LineEditor&) = delete;
  LineEditor& operator=(const LineEditor&) = delete;

  // Shows `prompt` and reads one edited line (without its newline) into
  // `line`. False at the end of the input (Ctrl-D on an empty line, the
  // terminal gone, or Ctrl-C when `interrupted` says so).
  bool read(const std::string& prompt, std::string& line);
  // Adds a sent input to the history (and its file).
  void remember(const std::string& input);

 private:
  static const char* prompt_of(EditLine* el);
  static int read_char(EditLine* el, wchar_t* out);
  EditLine* el_ = nullptr;
  History* history_ = nullptr;
  std::string history_file_, prompt_;
  std::function<bool()> interrupted_;
  bool warned_ = false;
};

}  // namespace k3
