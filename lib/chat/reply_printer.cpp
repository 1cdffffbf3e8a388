#include "chat/reply_printer.h"

namespace k3 {

namespace {
constexpr const char* kDim = "\x1b[2m";
constexpr const char* kReset = "\x1b[0m";
}  // namespace

void ReplyPrinter::leave(std::string& out) {
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
    out.push_back(c);
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
