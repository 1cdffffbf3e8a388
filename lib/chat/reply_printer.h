// How a streamed reply is shown: the answer as plain text; the reasoning
// dimmed on a terminal and, elsewhere, every reasoning line prefixed with
// "> " so it stays apart from the answer in a file or a pipe (or hidden);
// tool calls on lines of their own starting with "tool call: ".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "chat/reply_parser.h"

namespace k3 {

struct ReplyStyle {
  bool terminal = false;  // ANSI dim for the reasoning instead of "> "
  bool show_reasoning = true;
};

class ReplyPrinter {
 public:
  explicit ReplyPrinter(ReplyStyle style) : style_(style) {}
  // The text to write for these pieces.
  std::string format(const std::vector<ReplyPiece>& pieces);
  // The end of the reply: closes a dim span and ends the last line.
  std::string finish();

 private:
  void enter(ReplyChannel channel, std::string& out);
  void leave(std::string& out);
  void append_text(const std::string& text, std::string& out);

  ReplyStyle style_;
  std::optional<ReplyChannel> current_;
  bool at_line_start_ = true;
  bool wrote_ = false;
};

}  // namespace k3
