// k3-chat's own flags: the conversation (--system, --thinking on|off,
// --effort (also --thinking-effort), --no-think, --history, --tools, --tok), the reply (--max-tokens,
// --no-reasoning, --json, --logits) and what is reported (--stats,
// --no-reuse). Declared here, as k3-forward's are, so the tool's main stays a
// list of steps.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "chat/chat_history.h"
#include "chat/chat_loop.h"
#include "chat/chat_session.h"

namespace k3 {

struct ChatFlags {
  ChatOptions chat;
  ChatLoopOptions loop;
  std::string system, effort = "max", thinking = "on", history_path, tok_dir, tools_path, json_schema_path;
  bool no_think = false, no_reasoning = false;

  void add_to(CLI::App& app);
  // Fills `chat` and `loop` from the flags once parsed: thinking and effort,
  // the logits rows --logits keeps, the reply style, the positions the plan holds (`ctx`, 0:
  // the default 8192) and --system's opening message. --tools is read by the
  // caller, after --plan has been answered. --json-schema is read and
  // compiled here (kBadInput naming the file and the keyword it refuses).
  void apply(uint64_t ctx);
  // A resumed --history's /think and /effort (chat_history.h), for those of
  // --thinking, --no-think and --effort not given; says on stderr what it took.
  void resume(const ChatThinkingSetting& kept);

 private:
  CLI::Option *thinking_flag_ = nullptr, *no_think_flag_ = nullptr, *effort_flag_ = nullptr;
};

}  // namespace k3
