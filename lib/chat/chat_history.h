// A chat transcript on disk: JSONL, one OpenAI-style message object per line
// (what a request's "messages" holds), so a later run resumes it and other
// tools can read it. Lines are appended whole as the conversation goes on
// (after a line end of their own when the file's last line has none: an
// edited file, or a write cut by a full disk), so two messages never share a
// line; /reset and /undo rewrite the file atomically and reopen it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_value.h"

namespace k3 {

// k3-chat's /think and /effort as a history keeps them, so a resumed chat
// thinks as it was left: a line of its own, {"k3_chat_settings":
// {"thinking": "off", "effort": "low"}} ("effort": "none" for no note). It
// has no "role": it is not a message, and the last one counts.
struct ChatThinkingSetting {
  bool thinking = true;
  std::optional<std::string> effort;
};
bool is_chat_settings_line(const JsonValue& line);

// The messages of `path` (none if it does not exist), its settings lines
// left out. Error(kBadInput) naming the file and line for a line that is not
// a JSON object, or a settings line with other values.
std::vector<JsonValue> load_chat_history(const std::string& path);
// The last settings line of `path`; none when it has none (or does not exist).
std::optional<ChatThinkingSetting> load_chat_settings(const std::string& path);

// The walk over a history's text that load_chat_history reads messages by:
// `visit(line_no, line)` for every line that is not blank or a settings
// line (1-based numbers), in order, until it returns false. Those hold no
// message, so a message's index and its line number differ by the blank and
// settings lines before it.
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
  // Appends a settings line (after /think or /effort); rewrite() writes it
  // first, so /reset and /undo keep it.
  void keep_settings(const ChatThinkingSetting& setting);
  // The last settings line, of the file as opened or kept since.
  const std::optional<ChatThinkingSetting>& settings() const { return settings_; }
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
  std::optional<ChatThinkingSetting> settings_;
};

}  // namespace k3
