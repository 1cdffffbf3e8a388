// k3-tokenize: text on stdin (or a file, or --text) -> Kimi-K3 token ids;
// with --chat, an OpenAI-style chat request -> the ids of its XTML prompt.
//
// Reads raw bytes, so no text passes through argv or locale re-encoding
// unless --text is used. Output is produced only once the whole input has
// been encoded: on any error stdout stays empty.
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "chat/xtml_renderer.h"
#include "cli/stdout_writer.h"
#include "cli/cli_parse.h"
#include "model/config.h"
#include "model/tokenizer_match.h"
#include "common/error.h"
#include "common/tool_main.h"
#include "common/file.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// CPU time of this thread: on a busy machine wall time also counts waiting.
double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int run(int argc, char** argv) {
  CLI::App app{
      "Turns text into Kimi-K3 token ids, byte-exact with the reference tokenizer.\n"
      "Reads raw UTF-8 from stdin unless --prompt-file or --text is given; writes one id per line.\n"
      "Example: k3-tokenize --tok ~/k3model < prompt.txt | k3-forward ~/k3model --gen 64 | k3-detok --tok ~/k3model",
      "k3-tokenize"};
  std::string tok_dir, prompt_file, text, chat_file, format = "ids";
  bool have_text = false, bos = false, no_specials = false, count = false, lossy = false, stats = false;
  bool chat = false, text_out = false;
  app.add_option("--tok", tok_dir, "Tokenizer directory holding tiktoken.model and tokenizer_config.json "
                                   "(usually the model directory)")
      ->required();
  std::string model_dir;
  app.add_option("--model", model_dir,
                 "Model directory the ids are for: refuse when the tokenizer's vocabulary or special tokens "
                 "disagree with its config (a tokenizer of another model gives ids that compute garbage)");
  auto* pf = app.add_option("--prompt-file", prompt_file, "Read the text from FILE instead of stdin (- is stdin; pipes and FIFOs are read to the end)");
  auto* tx = app.add_option("--text", text, "Encode STRING instead of reading stdin");
  pf->excludes(tx);
  auto* ch = app.add_flag("--chat", chat,
                          "Read an OpenAI-style chat request (JSON: messages, tools, thinking, thinking_effort, ...) "
                          "and write the ids of its K3 chat prompt (SPEC section 5)");
  auto* cf = app.add_option("--chat-file", chat_file, "Read the chat request from FILE instead of stdin (implies --chat)");
  app.add_flag("--text-out", text_out, "With --chat: write the rendered prompt text instead of ids (for reading)");
  for (CLI::Option* o : {ch, cf}) o->excludes(pf)->excludes(tx);
  app.add_option("--format", format, "ids: one id per line (default); line: all ids on one space-separated line")
      ->check(CLI::IsMember({"ids", "line"}));
  app.add_flag("--bos", bos, "Prepend the BOS id (tokenizer_config.json's bos_token); nothing is added otherwise");
  app.add_flag("--no-specials", no_specials,
               "Treat special-token names such as [EOS] in the text as plain text instead of special ids");
  app.add_flag("--count", count, "Print only the number of tokens");
  app.add_flag("--lossy", lossy, "Replace invalid UTF-8 with U+FFFD instead of failing");
  app.add_flag("--stats", stats, "Print vocabulary load time and encoding speed to stderr");
  app.footer(std::string("Exit status 4 with the byte offset if the input is not valid UTF-8 (unless --lossy), and\n"
                         "for a chat request that is invalid, naming the field (e.g. messages[2].role).\n") +
             k3::exit_codes_help());
  if (auto status = k3::parse_command_line(app, argc, argv, "k3-tokenize")) return *status;
  have_text = tx->count() > 0;
  chat = chat || !chat_file.empty();
  if (chat && (bos || no_specials || lossy))
    throw k3::Error(k3::ExitCode::kUsage, "--chat renders the request's own markup: --bos, --no-specials and --lossy "
                                          "do not apply");
  if (text_out && !chat) throw k3::Error(k3::ExitCode::kUsage, "--text-out shows a rendered chat prompt: add --chat");

  auto t0 = Clock::now();
  k3::Tokenizer tok = k3::Tokenizer::load(tok_dir);
  double load_s = seconds_since(t0);
  if (!model_dir.empty()) k3::check_tokenizer_matches(k3::load_model_config(model_dir), model_dir, tok.vocab(), tok_dir);

  std::string input;
  if (have_text)
    input = text;
  else if (!prompt_file.empty() || !chat_file.empty())
    input = chat ? k3::read_input(chat_file, "chat file") : k3::read_input(prompt_file, "prompt file");
  else
    input = k3::read_all(0, "stdin");

  size_t bad = k3::utf8::find_invalid(input);
  if (bad != k3::utf8::kNotFound) {
    if (!lossy || chat)
      throw k3::Error(k3::ExitCode::kBadInput, "input is not valid UTF-8 at byte offset " + std::to_string(bad) +
                                                    " (fix the text, or pass --lossy to replace bad bytes with U+FFFD)");
    input = k3::utf8::replace_invalid(input);
  }

  std::vector<k3::TokenId> ids;
  if (bos) {
    if (tok.vocab().bos_id() == k3::Vocabulary::kNoToken)
      throw k3::Error(k3::ExitCode::kBadModel, tok_dir + "/tokenizer_config.json names no bos_token, so --bos has no id");
    ids.push_back(tok.vocab().bos_id());
  }
  auto t1 = Clock::now();
  double c1 = thread_cpu_seconds();
  if (chat) {
    const k3::RenderedChat rendered = k3::render_chat(k3::parse_chat_request(input));
    if (text_out) {
      k3::write_all_stdout(k3::segments_text(rendered.segments));
      return 0;
    }
    ids = k3::encode_chat(tok, rendered).ids;
  } else {
    tok.encode(input, !no_specials, ids);
  }
  double encode_s = seconds_since(t1);
  double encode_cpu_s = thread_cpu_seconds() - c1;

  std::string out;
  if (count) {
    out = std::to_string(ids.size()) + "\n";
  } else {
    out.resize(ids.size() * 11 + 1);
    char sep = format == "line" ? ' ' : '\n';
    char* p = out.data();
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i > 0) *p++ = sep;
      p = std::to_chars(p, p + 10, ids[i]).ptr;
    }
    if (!ids.empty() || format == "line") *p++ = '\n';
    out.resize(static_cast<size_t>(p - out.data()));
  }
  k3::write_all_stdout(out);
  if (stats) {
    double mb = input.size() / 1e6;
    std::fprintf(stderr,
                 "k3-tokenize: vocabulary of %u tokens loaded in %.1f ms; %zu bytes -> %zu tokens in %.3f s "
                 "(%.2f MB/s, %.0f tokens/s; %.3f s CPU, %.2f MB/s per CPU second)\n",
                 tok.vocab().size(), load_s * 1e3, input.size(), ids.size(), encode_s,
                 encode_s > 0 ? mb / encode_s : 0.0, encode_s > 0 ? ids.size() / encode_s : 0.0, encode_cpu_s,
                 encode_cpu_s > 0 ? mb / encode_cpu_s : 0.0);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return k3::run_tool("k3-tokenize", [&] { return run(argc, argv); });
}
