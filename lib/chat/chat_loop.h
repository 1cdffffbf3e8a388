// The conversation loop of k3-chat: reads messages and commands, runs one
// turn per message, shows the reply as it streams, and keeps the history
// file in step with the conversation.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_history.h"
#include "chat/chat_input.h"
#include "chat/chat_session.h"
#include "chat/reply_printer.h"
#include "state/continuation.h"

namespace k3 {

// One turn's prefill: ids already in the model state and ids evaluated.
struct TurnIds {
  int64_t reused = 0, prefilled = 0;
};

struct ChatLoopOptions {
  std::string tool = "k3-chat";        // prefix of status lines
  ChatHistoryFile* history = nullptr;  // the transcript on disk, if any
  // The model state beside it (chat_state.h), rewritten after each change of
  // the transcript; empty or no identity: none.
  std::string state_path;
  const ModelIdentity* identity = nullptr;
  std::vector<TurnIds>* turns = nullptr;  // when given, one entry per turn answered (--stats-json)
  std::vector<JsonValue> start_messages;  // a new conversation (and /reset) starts with these
  ReplyStyle style;
  bool stats = false;                     // a line per turn: prompt, reused and prefilled ids, seconds
  bool json = false;                      // each assistant message as one JSON line on stdout, nothing streamed
  std::string logits_path;                // each reply's first logits row, [turns, vocab]
  std::function<bool()> interrupted;      // Ctrl-C arrived
  std::function<void()> clear_interrupt;  // after a stopped reply: listen again
  Session::Progress progress;             // for long prefills
};

// Runs until /exit or the end of the input. Returns the exit status: 0, 4
// when a message or command was refused, 130 for Ctrl-C at the prompt.
int run_chat_loop(ChatSession& chat, UserInputReader& input, const ChatLoopOptions& options);

}  // namespace k3
