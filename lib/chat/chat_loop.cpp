#include "chat/chat_loop.h"

#include <cstdio>

#include "chat/chat_history.h"
#include "chat/chat_state.h"
#include "chat/python_json.h"
#include "common/error.h"
#include "common/file.h"
#include "common/rate_format.h"
#include "common/terminal_line.h"
#include "common/text_wrap.h"
#include "engine/session.h"  // LogitsLog

namespace k3 {

namespace {

// /help's text, wrapped to the terminal's width when shown.
constexpr const char* kHelp =
    "commands: /reset (new conversation; the old history is kept as a copy), /retry (a new reply to the last "
    "message), /undo (drop the last exchange), /save FILE (write the conversation as JSONL), "
    "/effort low|high|max|none, /think on|off (both kept in --history), /exit; a line ending in \\ goes on, "
    "\"\"\" starts and ends a block of lines; //x sends \"/x\"";

constexpr const char* kCommands[] = {"reset", "retry", "undo", "save", "effort", "think", "exit", "quit", "help"};

// The command meant by a mistyped one: the only command it is a prefix of,
// or the only one a single edit away (one letter changed, added or dropped).
std::string suggestion(const std::string& typed) {
  auto one_edit = [](const std::string& a, const std::string& b) {
    if (a.size() == b.size()) {
      int diff = 0;
      for (size_t i = 0; i < a.size(); ++i) diff += a[i] != b[i];
      return diff == 1;
    }
    const std::string& s = a.size() < b.size() ? a : b;
    const std::string& l = a.size() < b.size() ? b : a;
    if (l.size() != s.size() + 1) return false;
    size_t i = 0;
    while (i < s.size() && s[i] == l[i]) ++i;
    return s.compare(i, std::string::npos, l, i + 1, std::string::npos) == 0;
  };
  std::string found;
  int matches = 0;
  for (const char* c : kCommands)
    if (!typed.empty() && std::string(c).rfind(typed, 0) == 0) found = c, ++matches;
  if (matches == 1) return found;
  matches = 0;
  for (const char* c : kCommands)
    if (one_edit(typed, c)) found = c, ++matches;
  return matches == 1 ? found : "";
}

// The first free "<stem>-N.jsonl" beside `path` (N = 1, 2, ...), where /reset
// keeps the conversation it ends.
std::string archive_path(const std::string& path) {
  std::string stem = path;
  if (stem.size() > 6 && stem.compare(stem.size() - 6, 6, ".jsonl") == 0) stem.resize(stem.size() - 6);
  for (int n = 1;; ++n) {
    const std::string p = stem + "-" + std::to_string(n) + ".jsonl";
    if (!file_exists(p)) return p;
  }
}

class Loop {
 public:
  Loop(ChatSession& chat, UserInputReader& input, const ChatLoopOptions& o)
      : chat_(chat), input_(input), o_(o), history_(o.history), logits_(!o.logits_path.empty(), 0) {}

  int run() {
    if (history_ && chat_.messages().empty() && !o_.start_messages.empty())
      for (const JsonValue& m : o_.start_messages) history_->append(m);
    if (input_.interactive())
      say(std::to_string(chat_.messages().size()) + " messages in the conversation; /help lists the commands");
    while (true) {
      if (input_.interactive()) write_all(1, input_.edits_lines() ? "\n" : "\n> ", "stdout");
      const UserInput in = input_.next();
      if (in.kind == UserInput::kEnd) break;
      if (in.kind == UserInput::kCommand) {
        if (in.text == "exit" || in.text == "quit") break;
        try {
          command(in);
        } catch (const Error& e) {
          if (e.code() != ExitCode::kIo && e.code() != ExitCode::kBadInput) throw;
          refuse(std::string("/") + in.text + ": " + e.what());
        }
        continue;
      }
      turn(in.text);
    }
    if (!o_.logits_path.empty()) logits_.write(o_.logits_path);
    if (o_.interrupted && o_.interrupted()) return static_cast<int>(ExitCode::kInterrupted);
    // At a terminal a refused command was answered there and the session
    // went on: ending it is a success. Piped input has no one to answer.
    return refused_ && !input_.interactive() ? static_cast<int>(ExitCode::kBadInput) : 0;
  }

 private:
  void say(const std::string& line) { std::fprintf(stderr, "%s: %s\n", o_.tool.c_str(), line.c_str()); }
  void refuse(const std::string& line) {
    say(line);
    refused_ = true;
  }

  void turn(const std::string& text) {
    ReplyPrinter printer(o_.style);
    TurnReport r;
    try {
      r = chat_.reply(
          text,
          [&](const std::vector<ReplyPiece>& pieces) {
            if (!o_.json) write_all(1, printer.format(pieces), "stdout");
          },
          o_.interrupted, o_.progress);
    } catch (const Error& e) {
      if (!o_.json) write_all(1, printer.finish(), "stdout");
      if (e.code() == ExitCode::kInterrupted) {
        say("stopped while reading the prompt; the message was not sent");
        if (o_.clear_interrupt) o_.clear_interrupt();
        return;
      }
      if (e.code() != ExitCode::kBadInput) throw;
      return refuse(std::string("message refused: ") + e.what());
    }
    const auto& msgs = chat_.messages();
    if (r.interrupted) {
      if (!o_.json) write_all(1, printer.finish(), "stdout");
      say("reply stopped (Ctrl-C); the conversation is as before this message");
      if (o_.clear_interrupt) o_.clear_interrupt();
      return;
    }
    // --json: the message as the history keeps it (reasoning_content, content, tool_calls), one line.
    write_all(1, o_.json ? python_json_dumps(msgs.back()) + "\n" : printer.finish(), "stdout");
    ++turns_;
    if (o_.turns) o_.turns->push_back({r.reused_ids, r.prefilled_ids});
    // A tool call is shown whole; what the user (or script) sends next is its result.
    if (const JsonValue* calls = msgs.back().find("tool_calls"); !o_.json && calls && calls->is_array())
      for (const JsonValue& call : calls->items) say("tool call " + python_json_dumps(call) + "; send its result next");
    if (history_)
      for (size_t i = msgs.size() - 2; i < msgs.size(); ++i) history_->append(msgs[i]);
    keep_state();
    if (!o_.logits_path.empty()) {
      if (logits_.rows() == 0) logits_ = LogitsLog(true, r.first_row.size());
      logits_.add(r.first_row.data(), 1);
    }
    if (!r.reply.ok()) {
      say("warning: the reply is incomplete: " + r.reply.problem);
    }
    if (o_.stats) {
      char line[320];
      std::snprintf(line, sizeof line,
                    "turn %d: prompt %lld ids, %lld reused, %lld prefilled in %.3f s; %lld generated in %.3f s "
                    "(%s), %lld weight passes, drafts %lld/%lld kept",
                    turns_, static_cast<long long>(r.prompt_ids), static_cast<long long>(r.reused_ids),
                    static_cast<long long>(r.prefilled_ids), r.prefill_seconds, static_cast<long long>(r.generated),
                    r.decode_seconds, seconds_per_token(r.decode_seconds, r.generated).c_str(),
                    static_cast<long long>(r.passes), static_cast<long long>(r.drafts_accepted),
                    static_cast<long long>(r.drafts_proposed));
      say(line);
    }
  }

  void command(const UserInput& in) {
    ChatOptions& opt = chat_.options();
    if (in.text == "help") {
      const int columns = terminal_columns(2);  // 0: not a terminal, where 100 columns read well
      write_all(2, wrap_words(kHelp, columns > 0 ? static_cast<size_t>(columns) : 100, 2), "stderr");
    } else if (in.text == "reset") {
      std::string kept;
      if (history_ && chat_.messages().size() > o_.start_messages.size()) {
        kept = archive_path(history_->path());
        write_chat_history(kept, chat_.messages());
      }
      chat_.reset(o_.start_messages);
      if (history_) history_->rewrite(o_.start_messages);
      keep_state();
      say(kept.empty() ? std::string("new conversation") : "new conversation; the previous one is kept in " + kept);
    } else if (in.text == "undo" || in.text == "retry") {
      undo_or_retry(in.text == "retry");
    } else if (in.text == "save") {
      if (in.argument.empty()) return refuse("/save needs a file name: /save FILE");
      // Onto the chat's own history: through it, so the chat keeps appending
      // to the file at that name (a plain write would swap in a new file
      // and later turns would go to the unlinked one).
      if (history_ && history_->is(in.argument)) history_->rewrite(chat_.messages());
      else write_chat_history(in.argument, chat_.messages());
      say("conversation saved to " + in.argument + " (" + std::to_string(chat_.messages().size()) + " messages)");
    } else if (in.text == "effort") {
      if (in.argument == "none" || in.argument == "null") {
        opt.effort.reset();
      } else if (is_supported_effort(in.argument)) {
        opt.effort = in.argument;
      } else {
        return refuse("/effort " + in.argument + ": not supported (low, high, max, or none for no effort note)");
      }
      say("thinking effort " + (opt.effort ? *opt.effort : std::string("none")) +
          (opt.thinking ? "" : " (used once thinking is on: /think on)"));
      if (history_) history_->keep_settings({opt.thinking, opt.effort});  // a resumed chat keeps it
    } else if (in.text == "think") {
      if (in.argument != "on" && in.argument != "off") return refuse("/think takes on or off");
      opt.thinking = in.argument == "on";
      say(std::string("thinking ") + (opt.thinking ? "on" : "off"));
      if (history_) history_->keep_settings({opt.thinking, opt.effort});
    } else {
      const std::string meant = suggestion(in.text);
      refuse("unknown command /" + in.text + (meant.empty() ? "" : "; did you mean /" + meant + "?") +
             " (/help lists the commands)");
    }
  }

  // /undo drops the last exchange (the last user message and what answered
  // it); /retry drops the reply only and answers the same message again.
  void undo_or_retry(bool retry) {
    std::vector<JsonValue> msgs = chat_.messages();
    size_t user = msgs.size();  // the last user message after the start messages
    for (size_t i = msgs.size(); i > o_.start_messages.size(); --i) {
      const JsonValue* role = msgs[i - 1].find("role");
      if (role && role->is_string() && role->text == "user") {
        user = i - 1;
        break;
      }
    }
    if (user >= msgs.size())
      return refuse(std::string("/") + (retry ? "retry" : "undo") + ": no message to go back to");
    const JsonValue* content = msgs[user].find("content");
    const std::string text = content && content->is_string() ? content->text : "";
    msgs.resize(user);
    chat_.set_messages(msgs);
    if (history_) history_->rewrite(msgs);
    keep_state();
    if (!retry) return say("the last exchange was dropped (" + std::to_string(msgs.size()) + " messages left)");
    if (text.empty()) return refuse("/retry: the last message has no text to send again");
    turn(text);
  }

  // The state file follows the transcript; one that cannot be written is
  // said once and given up (the history alone still resumes the chat).
  void keep_state() {
    if (o_.state_path.empty() || !o_.identity || state_failed_) return;
    try {
      save_chat_state(chat_, o_.state_path, *o_.identity);
    } catch (const Error& e) {
      if (e.code() != ExitCode::kIo) throw;
      state_failed_ = true;
      say(std::string("warning: the model state is not kept: ") + e.what() +
          "; resuming evaluates the conversation again");
    }
  }

  ChatSession& chat_;
  UserInputReader& input_;
  const ChatLoopOptions& o_;
  ChatHistoryFile* history_;
  LogitsLog logits_;
  bool refused_ = false, state_failed_ = false;
  int turns_ = 0;
};

}  // namespace

int run_chat_loop(ChatSession& chat, UserInputReader& input, const ChatLoopOptions& options) {
  return Loop(chat, input, options).run();
}

}  // namespace k3
