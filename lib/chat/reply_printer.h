// How a streamed reply is shown: the answer as plain text; the reasoning
// dimmed on a terminal and, elsewhere, every reasoning line prefixed with
// "> " so it stays apart from the answer in a file or a pipe (or hidden);
// tool calls on lines of their own starting with "tool call: ". On a
// terminal the model's text never drives it: control characters other than
// line feed and tab, DEL and the C1 controls (U+0080..U+009F) are shown
// visibly (ESC as ^[, CR as ^M, DEL as ^?, U+009B as <U+009B>), so an escape
// sequence in a reply cannot recolour, move, retitle or clear the screen.
// Elsewhere (a file, a pipe) the text is written as the model produced it.
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
  // One byte of the model's text as the terminal is to show it.
  void put_visible(unsigned char c, std::string& out);

  ReplyStyle style_;
  std::optional<ReplyChannel> current_;
  bool at_line_start_ = true;
  bool wrote_ = false;
  bool lead_c2_ = false;  // a 0xC2 byte held back: it may begin a C1 control
};

}  // namespace k3
