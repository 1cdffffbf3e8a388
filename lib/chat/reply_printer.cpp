#include "chat/reply_printer.h"

namespace k3 {

namespace {
constexpr const char* kDim = "\x1b[2m";
constexpr const char* kReset = "\x1b[0m";
}  // namespace

void ReplyPrinter::put_visible(unsigned char c, std::string& out) {
  if (lead_c2_) {
    lead_c2_ = false;
    if (c >= 0x80 && c <= 0x9f) {  // U+0080..U+009F: C1 controls (U+009B is a CSI on its own)
      static const char* kHex = "0123456789ABCDEF";
      out += "<U+00";
      out += kHex[c >> 4];
      out += kHex[c & 15];
      out += '>';
      return;
    }
    out += '\xC2';
  }
  if (c == 0xC2) {
    lead_c2_ = true;
  } else if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
    out += '^';
    out += static_cast<char>(c ^ 0x40);  // ESC -> ^[, CR -> ^M, DEL -> ^?
  } else {
    out += static_cast<char>(c);
  }
}

void ReplyPrinter::leave(std::string& out) {
  if (lead_c2_) out += '\xC2';
  lead_c2_ = false;
  if (!current_) return;
  if (*current_ == ReplyChannel::kThink && style_.terminal && style_.show_reasoning) out += kReset;
  current_.reset();
}

void ReplyPrinter::enter(ReplyChannel channel, std::string& out) {
  if (current_ == channel) return;
  const bool was_hidden = current_ == ReplyChannel::kThink && !style_.show_reasoning;
  leave(out);
  // A new channel starts on a new line, after a blank one.
  if (wrote_ && !was_hidden) {
    if (!at_line_start_) out += '\n';
    out += '\n';
    at_line_start_ = true;
  }
  current_ = channel;
  if (channel == ReplyChannel::kThink && style_.terminal && style_.show_reasoning) out += kDim;
}

void ReplyPrinter::append_text(const std::string& text, std::string& out) {
  const char* prefix = nullptr;
  if (*current_ == ReplyChannel::kThink && !style_.terminal) prefix = "> ";
  if (*current_ == ReplyChannel::kTools) prefix = "tool call: ";
  for (char c : text) {
    if (at_line_start_ && prefix) out += prefix;
    if (style_.terminal) put_visible(static_cast<unsigned char>(c), out);
    else out.push_back(c);
    at_line_start_ = c == '\n';
  }
  wrote_ = wrote_ || !text.empty();
}

std::string ReplyPrinter::format(const std::vector<ReplyPiece>& pieces) {
  std::string out;
  for (const ReplyPiece& p : pieces) {
    if (p.text.empty()) continue;
    enter(p.channel, out);
    if (p.channel == ReplyChannel::kThink && !style_.show_reasoning) continue;
    append_text(p.text, out);
  }
  return out;
}

std::string ReplyPrinter::finish() {
  std::string out;
  leave(out);
  if (!at_line_start_) out += '\n';
  at_line_start_ = true;
  return out;
}

}  // namespace k3
