// k3-detok: Kimi-K3 token ids on stdin -> text on stdout, as they arrive.
//
// Ids are read as soon as they are complete (whitespace-separated, one per
// line or several per line) and each one's text is written and flushed at
// once, so `k3-forward ... | k3-detok` shows text while it is generated. A
// token that ends inside a UTF-8 character is held back until the next one
// completes it; invalid bytes become U+FFFD exactly as Python's
// bytes.decode("utf-8", errors="replace") would. With --chat the ids are a
// K3 chat reply: the reasoning is shown apart from the answer (lib/chat
// reply_printer.h) and --json ends with the parsed assistant message.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include "chat/python_json.h"
#include "chat/reply_printer.h"
#include "cli/cli_parse.h"
#include "cli/stdout_writer.h"
#include "cli/token_id_reader.h"
#include "common/error.h"
#include "common/file.h"
#include "common/tool_main.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/vocabulary.h"

namespace {

struct DetokFlags {
  std::string tok_dir, ids_file = "-";
  bool raw = false, skip_special = false, chat = false, no_think = false, no_reasoning = false, json = false;
  std::string format = "stream";
};

// Reads and checks the flags; a status when the run ends here (--help, a bad flag).
std::optional<int> parse_flags(int argc, char** argv, DetokFlags& f) {
  CLI::App app{
      "Turns Kimi-K3 token ids back into text, writing each token's text as soon as its id arrives.\n"
      "Reads ids from stdin (or FILE; - is stdin), one per line or separated by spaces.\n"
      "Example: k3-tokenize --tok ~/k3model < prompt.txt | k3-forward ~/k3model --gen 64 | k3-detok --tok ~/k3model",
      "k3-detok"};
  app.add_option("--tok", f.tok_dir,
                 "Tokenizer directory holding tiktoken.model and tokenizer_config.json "
                 "(usually the model directory)")
      ->required();
  app.add_option("FILE", f.ids_file, "Read the ids from FILE instead of stdin (- is stdin)");
  app.add_flag("--raw", f.raw, "Write the token bytes unchanged (no UTF-8 repair; output may be invalid UTF-8)");
  app.add_flag("--skip-special", f.skip_special, "Drop special tokens instead of printing their names, e.g. [EOS]");
  app.add_flag("--chat", f.chat,
               "The ids are a K3 chat reply (what follows the generation prompt): show the answer, the reasoning "
               "apart from it (dimmed on a terminal, else each line starting \"> \"), tool calls on their own lines");
  app.add_flag("--no-think", f.no_think, "With --chat: the prompt had thinking off (the reply starts in the answer)");
  app.add_flag("--no-reasoning", f.no_reasoning, "With --chat: do not show the reasoning");
  app.add_flag("--json", f.json,
               "With --chat: end with the parsed assistant message as one JSON line (exit 4 when the reply is "
               "malformed: cut short, a control token inside a channel)");
  app.add_option("--format", f.format,
                 "stream: the text of all ids as one text (default); line: each input line of ids (as k3-forward "
                 "--batch writes them) becomes one line of text, with newlines and backslashes inside it written "
                 "as \\n and \\\\")
      ->check(CLI::IsMember({"stream", "line"}));
  app.footer(std::string("Exit status 4 names the offending id and its position (1-based) in the input.\n") +
             k3::exit_codes_help());
  if (auto status = k3::parse_command_line(app, argc, argv, "k3-detok")) return *status;
  if (f.chat && f.format == "line")
    throw k3::Error(k3::ExitCode::kUsage, "--chat reads one reply; it cannot be combined with --format line");
  if (!f.chat && (f.no_think || f.no_reasoning || f.json))
    throw k3::Error(k3::ExitCode::kUsage, "--no-think, --no-reasoning and --json read a chat reply: add --chat");
  if (f.chat && (f.raw || f.skip_special))
    throw k3::Error(k3::ExitCode::kUsage, "--chat shows the reply's channels: --raw and --skip-special do not apply");
  return std::nullopt;
}

// --format line's text: newlines and backslashes written as \n and \\.
std::string escaped_line(const std::string& text) {
  std::string escaped;
  for (char c : text) escaped += c == '\n' ? std::string("\\n") : c == '\\' ? std::string("\\\\") : std::string(1, c);
  return escaped;
}

// --chat's end: the reply's last pieces, --json's message line, and a
// malformed reply refused (--json) or warned of.
int finish_reply(k3::ReplyParser& reply, k3::ReplyPrinter& printer, bool json) {
  std::vector<k3::ReplyPiece> pieces;
  const k3::ParsedReply parsed = reply.finish(pieces);
  k3::write_all_stdout(printer.format(pieces) + printer.finish());
  if (json) k3::write_all_stdout(k3::python_json_dumps(k3::chat_message_json(parsed.message)) + "\n");
  if (parsed.ok()) return 0;
  const std::string what = parsed.problem.empty() ? "the reply is incomplete" : parsed.problem;
  if (json) throw k3::Error(k3::ExitCode::kBadInput, "malformed reply: " + what);
  std::fprintf(stderr, "k3-detok: warning: malformed reply: %s\n", what.c_str());
  return 0;
}

int run(int argc, char** argv) {
  DetokFlags f;
  if (auto status = parse_flags(argc, argv, f)) return *status;

  const k3::Vocabulary vocab = k3::Vocabulary::load(f.tok_dir);
  k3::StreamDecoder decoder;
  k3::TokenIdReader reader("stdin", static_cast<int64_t>(vocab.size()));
  std::string out;
  std::optional<k3::ReplyParser> reply;
  if (f.chat) reply.emplace(vocab, !f.no_think);
  k3::ReplyPrinter printer({::isatty(1) == 1, !f.no_reasoning});
  std::vector<k3::ReplyPiece> pieces;
  const bool lines = f.format == "line";
  auto write_text = [&](const std::string& text) {
    if (!lines) {
      if (!text.empty()) k3::write_all_stdout(text);
      return;
    }
    const std::string escaped = escaped_line(text);
    if (!escaped.empty()) k3::write_all_stdout(escaped);
  };
  bool line_open = false;  // ids read since the last newline
  auto emit = [&](int32_t id) {
    line_open = true;
    auto tid = static_cast<k3::TokenId>(id);
    if (reply) {
      pieces.clear();
      reply->push(tid, pieces);
      k3::write_all_stdout(printer.format(pieces));
      return;
    }
    if (f.skip_special && vocab.is_special(tid)) return;
    std::string_view bytes = vocab.bytes(tid);
    if (f.raw) {
      write_text(std::string(bytes));
      return;
    }
    out.clear();
    decoder.push(bytes, out);
    write_text(out);
  };
  // --format=line: a line's text ends with its input line.
  auto end_line = [&] {
    out.clear();
    decoder.finish(out);
    write_text(out);
    k3::write_all_stdout("\n");
    line_open = false;
  };

  char buf[1 << 14];
  // Ids are decoded as they arrive: text appears while the producer runs.
  const k3::InputFd input = k3::InputFd::open(f.ids_file, "ids file");
  while (size_t r = k3::read_some(input.fd(), buf, sizeof buf, input.name()))
    reader.push(std::string_view(buf, r), emit, lines ? std::function<void()>(end_line) : nullptr);
  reader.finish(emit);
  if (reply) return finish_reply(*reply, printer, f.json);
  out.clear();
  decoder.finish(out);
  write_text(out);
  if (lines && line_open) k3::write_all_stdout("\n");  // a last line without its newline
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return k3::run_tool("k3-detok", [&] { return run(argc, argv); });
}
