// k3-chat: a conversation with Kimi-K3 in one process, the model loaded once.
//
// A thin front end: lib/chat's ChatSession renders the conversation in K3's
// chat format each turn and evaluates only what the model has not seen;
// run_chat_loop reads messages and commands, streams the replies and keeps
// the JSONL history (chat_loop.h, chat_input.h).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include "chat/chat_history.h"
#include "chat/chat_loop.h"
#include "chat/history_lines.h"
#include "chat/line_editor.h"
#include "chat/tool_declarations.h"
#include "chat_flags.h"
#include "chat_state_setup.h"
#include "cli/cli_parse.h"
#include "cli/interrupt.h"
#include "cli/model_options.h"
#include "cli/model_run.h"
#include "cli/prefill_progress.h"
#include "cli/sampling_options.h"
#include "cli/speculation_options.h"
#include "common/atomic_file_writer.h"
#include "common/error.h"
#include "common/tool_main.h"
#include "engine/session.h"
#include "model/tokenizer_match.h"

namespace {

constexpr const char* kTool = "k3-chat";

int run(int argc, char** argv) {
  CLI::App app{
      "Chat with Kimi-K3: type a message, the reply streams (reasoning dimmed, or lines starting \"> \" when\n"
      "not on a terminal). The model is loaded once; each turn evaluates only the new part of the conversation.\n"
      "Where the reply repeats the conversation, drafts are verified several per pass (--spec; --no-spec: same "
      "reply).\n"
      "Commands: /reset /retry /undo /save FILE /effort low|high|max|none /think on|off /exit /help. Ctrl-C stops a\n"
      "reply. At a terminal lines are edited (arrows, Up for earlier inputs, kept in ~/.local/state/k3/chat-inputs).\n"
      "From a script (stdin not a terminal) the lines up to the next command are one message:\n"
      "  k3-chat ~/k3model --history chat.jsonl < question.txt",
      kTool};
  k3::ModelOptions mo;
  k3::SamplingFlags sampling_flags;
  k3::ChatSpeculationFlags spec_flags;
  k3::ChatFlags f;
  k3::add_model_options(app, mo);
  f.add_to(app);
  sampling_flags.add_to(app);
  spec_flags.add_to(app);
  k3::add_budget_options(app, mo, false,
                         {"Context positions the conversation may reach (default 8192)",
                          "Print the memory plan for these budget flags and --ctx (default 8192), then exit: 0 when "
                          "it fits, 6 when it would be refused. Reads no weights"});
  app.footer(std::string("Exit status 4 when a message or command was refused or the history is invalid (naming the\n"
                         "line and field), also a message that would make the conversation longer than --ctx (default\n"
                         "8192 positions; a reply is cut where the context ends); 6 when the resumed conversation\n"
                         "itself does not fit in --ctx; 130 after Ctrl-C at the prompt.\n") +
             k3::exit_codes_help());
  if (auto status = k3::parse_command_line(app, argc, argv, kTool)) return *status;
  mo.stream.snapshots_optional = spec_flags.is_default();
  // --list-presets counts --spec's rollback copies and the --draft model.
  const auto run_flags = [&](const k3::ModelConfig& c, k3::RunRequest& s) { spec_flags.check(c, s); };
  if (auto status = k3::apply_early_options(mo, run_flags)) return *status;
  f.apply(mo.ctx);
  // Cheap checks before any weight is read: outputs, config, tokenizer, history.
  if (!f.loop.logits_path.empty()) k3::check_output_path(f.loop.logits_path, k3::OutputPolicy::kFileOrStream);
  const k3::ModelConfig config = k3::load_model_config(mo.model_dir);
  if (mo.ctx == 0) mo.ctx = 8192, mo.stream.context_is_default = true;  // what --plan plans is what a run holds
  spec_flags.check(config, mo.stream);  // rollback copies, the draft's memory; a --draft that does not fit: exit 3
  if (auto status = k3::answer_plan_requests(config, mo, kTool)) return *status;
  if (!f.tools_path.empty()) f.chat.tools = k3::load_tool_declarations(f.tools_path);
  const k3::Tokenizer tok = k3::Tokenizer::load(f.tok_dir.empty() ? mo.model_dir : f.tok_dir);
  if (!f.tok_dir.empty()) k3::check_tokenizer_matches(config, mo.model_dir, tok.vocab(), f.tok_dir);
  k3::check_tokenizer_covers(config, mo.model_dir, tok.vocab(), f.tok_dir.empty() ? mo.model_dir : f.tok_dir);
  std::vector<k3::JsonValue> history;
  std::optional<k3::ChatHistoryFile> history_file;
  if (!f.history_path.empty())
    history = k3::load_checked_history(f.history_path), f.loop.history = &history_file.emplace(f.history_path);
  if (history_file && history_file->settings()) f.resume(*history_file->settings());  // /think, /effort kept
  k3::Checkpoint checkpoint = k3::Checkpoint::open(mo.model_dir);
  std::optional<k3::ModelIdentity> identity;  // a state file beside the history: resuming evaluates only what is new
  if (!f.history_path.empty() && f.chat.reuse_state) identity = k3::chat_state_identity(config, checkpoint);
  const std::unique_ptr<k3::Model> model = k3::load_model(config, std::move(checkpoint), mo, f.chat.context, 256);
  k3::ignore_sigpipe();
  k3::install_interrupt_handler(k3::stopping_message(kTool));
  k3::GenerationOptions go{k3::resolve_sampling(std::nullopt, sampling_flags.given()),
                           k3::StopConditions(config.eos_token_ids, k3::chat_stop_ids(tok.vocab(), {}), false), false,
                           false, model->max_drafts()};
  k3::Session session = model->session(go);
  session.set_stop_within_pass(k3::interrupted);  // Ctrl-C cuts a pass within a layer; the turn is dropped
  k3::NgramDrafts lookup;
  session.set_drafts(&lookup);
  spec_flags.start_draft(*model, session, &lookup);
  k3::ChatSession chat(tok, session, f.chat);
  chat.set_messages(history.empty() ? f.loop.start_messages : history);
  if (!history.empty() && !f.system.empty())
    std::fprintf(stderr, "k3-chat: --system is not used: %s already starts the conversation\n", f.history_path.c_str());
  if (identity) k3::resume_chat_state(chat, f.loop, f.history_path, *identity);
  k3::PrefillProgress progress(kTool);
  f.loop.interrupted = k3::interrupted;
  f.loop.clear_interrupt = k3::rearm_interrupt;  // Ctrl-C stops one reply; SIGTERM ends the chat
  f.loop.progress = std::ref(progress);
  k3::UserInputReader input(0, ::isatty(0) == 1, k3::interrupted);
  std::optional<k3::LineEditor> editor;  // at a terminal only: a script's input is read as it is
  if (input.interactive()) input.use_editor(&editor.emplace(k3::default_input_history_path(), k3::interrupted));
  std::vector<k3::TurnIds> turns;  // --stats-json's "chat"
  f.loop.turns = &turns;
  const int status = spec_flags.finish_draft(k3::run_chat_loop(chat, input, f.loop));
  const std::string draft = spec_flags.draft().stats_json();
  k3::write_stats_json(*model, mo, session.counters(), static_cast<uint64_t>(session.counters().prompt_ids),
                       k3::chat_stats_json(turns) + (draft.empty() ? "" : ",\n" + draft));
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  return k3::run_tool(kTool, [&] { return run(argc, argv); });
}
