#include "chat_flags.h"

#include <unistd.h>

#include <cstdio>
#include <optional>

#include "cli/flag_checks.h"
#include "common/error.h"
#include "common/file.h"
#include "constrain/json_schema_compiler.h"

namespace k3 {

void ChatFlags::add_to(CLI::App& app) {
  app.add_option("--tok", tok_dir,
                 "Tokenizer directory (default: the model directory); refused when its vocabulary or special tokens "
                 "disagree with the model's config");
  app.add_option("--system", system, "System message that starts a new conversation (and each /reset; default: none)");
  effort_flag_ = app.add_option("--thinking-effort,--effort", effort,
                                "How much to think: low, high, max (default) or none (as /effort)")
                     ->check(CLI::IsMember({"low", "high", "max", "none"}));
  no_think_flag_ = app.add_flag("--no-think", no_think, "Answer without the thinking channel (as --thinking off)")
                       ->excludes(effort_flag_);
  thinking_flag_ = app.add_option("--thinking", thinking, "Think before answering: on (default) or off (as /think)")
                       ->check(CLI::IsMember({"on", "off"}))
                       ->excludes(no_think_flag_);
  app.add_option(
      "--history", history_path,
      "JSONL transcript, resumed when it exists (the model state kept beside it in FILE.k3s spares evaluating "
      "it again); new messages are appended, one per line, and /think and /effort too (a resumed chat keeps them "
      "unless --thinking or --effort is given) (default: none: the conversation is not kept)");
  app.add_option("--max-tokens", chat.max_tokens, "Longest reply in tokens (default 4096)")
      ->check(cli::positive_integer());
  app.add_flag("--no-reasoning", no_reasoning, "Do not show the reasoning (it is still kept in the conversation)");
  app.add_option("--tools", tools_path,
                 "OpenAI tool declarations (a JSON array) the model may call; a call is shown "
                 "(--json: in tool_calls) and the next message is the tool's result (default: none)");
  app.add_option("--json-schema", json_schema_path,
                 "Structured output: every answer is one JSON value this JSON schema accepts (the sampler masks "
                 "every id that could not continue one; the thinking section stays free). A keyword it does not "
                 "enforce is refused (exit 4), see docs/structured-output.md (default: none: free text)");
  app.add_flag("--json", loop.json,
               "Write each reply as one JSON line on stdout (the assistant message: "
               "reasoning_content, content, tool_calls) instead of streaming it");
  app.add_flag("--stats", loop.stats, "A line per turn on stderr: prompt, reused and prefilled ids, seconds");
  app.add_flag(
      "--no-reuse", [this](int64_t) { chat.reuse_state = false; },
      "Evaluate the whole conversation every turn instead of only its new part (for comparison)");
  app.add_option("--logits", loop.logits_path,
                 "Write the logits each reply's first token was drawn from (safetensors 'logits' [turns, vocab]; "
                 "default: none: not written)");
}

void ChatFlags::apply(uint64_t ctx) {
  chat.thinking = !no_think && thinking == "on";
  loop.style = {::isatty(1) == 1, !no_reasoning};  // dimmed reasoning at a terminal, "> " lines elsewhere
  chat.effort = effort == "none" ? std::nullopt : std::optional<std::string>(effort);
  chat.keep_first_rows = !loop.logits_path.empty();
  chat.context = ctx ? ctx : 8192;  // the positions the model's plan holds
  if (!system.empty()) loop.start_messages.push_back(text_message("system", system));
  if (!json_schema_path.empty()) {
    const std::string text = read_input(json_schema_path, "JSON schema");  // the compiler refuses over 1 MiB
    try {
      compile_json_schema_text(text);  // refused now, before any weight is read
    } catch (const Error& e) {
      throw Error(e.code(), "--json-schema " + json_schema_path + ": " + e.what());
    }
    JsonValue schema;
    std::string error;
    parse_json(text, schema, error);
    chat.response_schema = std::move(schema);
  }
}

void ChatFlags::resume(const ChatThinkingSetting& kept) {
  std::string took;
  if (thinking_flag_->count() == 0 && no_think_flag_->count() == 0) {
    chat.thinking = kept.thinking;
    took = std::string("thinking ") + (kept.thinking ? "on" : "off");
  }
  if (effort_flag_->count() == 0) {
    chat.effort = kept.effort;
    took += (took.empty() ? "" : ", ") + std::string("effort ") + (kept.effort ? *kept.effort : "none");
  }
  if (!took.empty())
    std::fprintf(stderr, "k3-chat: %s, as the history's last /think or /effort left it\n", took.c_str());
}

}  // namespace k3
