// A chat transcript on disk: JSONL, one OpenAI-style message object per line
// (what a request's "messages" holds), so a later run resumes it and other
// tools can read it. Lines are appended whole as the conversation goes on
// (after a line end of their own when the file's last line has none: an
// edited file, or a write cut by a full disk), so two messages never share a
// line; /reset and /undo rewrite the file atomically and reopen it.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_value.h"

namespace k3 {

// The messages of `path` (none if it does not exist). Error(kBadInput)
// naming the file and line for a line that is not a JSON object.
std::vector<JsonValue> load_chat_history(const std::string& path);

// The walk over a history's text that load_chat_history reads messages by:
// `visit(line_no, line)` for every line that is not blank (1-based numbers),
// in order, until it returns false. Blank lines hold no message, so a
// message's index and its line number differ by the blank lines before it.
void for_each_message_line(std::string_view text, const std::function<bool(size_t, std::string_view)>& visit);

// Writes the messages to `path` atomically (a temporary file, then rename).
void write_chat_history(const std::string& path, const std::vector<JsonValue>& messages);

class ChatHistoryFile {
 public:
  // Opens `path` for appending (created if absent; a symbolic link is
  // refused: Error(kIo) naming it).
  explicit ChatHistoryFile(std::string path);
  ~ChatHistoryFile();
  ChatHistoryFile(const ChatHistoryFile&) = delete;
  ChatHistoryFile& operator=(const ChatHistoryFile&) = delete;

  void append(const JsonValue& message);
  // Whether `path` names the file this history writes (the same file, by
  // any name: a link, another spelling), e.g. a /save target.
  bool is(const std::string& path) const;
  // Replaces the whole file (after /reset).
  void rewrite(const std::vector<JsonValue>& messages);
  const std::string& path() const { return path_; }

 private:
  void open();
  std::string path_;
  int fd_ = -1;
};

}  // namespace k3
