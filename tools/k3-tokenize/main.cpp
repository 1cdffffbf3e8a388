// k3-tokenize: text on stdin (or a file, or --text) -> Kimi-K3 token ids;
// with --chat, an OpenAI-style chat request -> the ids of its XTML prompt.
//
// Reads raw bytes, so no text passes through argv or locale re-encoding
// unless --text is used. Output is produced only once the whole input has
// been encoded: on any error stdout stays empty. The options are declared
// here; tokenize_command.cpp beside it does the work.
#include <CLI/CLI.hpp>
#include <string>

#include "cli/cli_parse.h"
#include "common/error.h"
#include "common/tool_main.h"
#include "tokenize_command.h"

namespace {

int run(int argc, char** argv) {
  CLI::App app{
      "Turns text into Kimi-K3 token ids, byte-exact with the reference tokenizer.\n"
      "Reads raw UTF-8 from stdin unless --prompt-file or --text is given; writes one id per line.\n"
      "Example: k3-tokenize --tok ~/k3model < prompt.txt | k3-forward ~/k3model --gen 64 | k3-detok --tok ~/k3model",
      "k3-tokenize"};
  k3::TokenizeCommand c;
  std::string format = "ids";
  app.add_option("--tok", c.tokenizer_dir,
                 "Tokenizer directory holding tiktoken.model and tokenizer_config.json (usually the model directory)")
      ->required();
  app.add_option("--model", c.model_dir,
                 "Model directory the ids are for: refuse when the tokenizer's vocabulary or special tokens "
                 "disagree with its config (a tokenizer of another model gives ids that compute garbage; default: "
                 "none: not checked)");
  auto* pf =
      app.add_option("--prompt-file", c.prompt_file,
                     "Read the text from FILE instead of stdin (- is stdin; pipes and FIFOs are read to the end; "
                     "default: none: stdin)");
  auto* tx = app.add_option("--text", c.text, "Encode STRING instead of reading stdin (default: none)");
  pf->excludes(tx);
  auto* ch = app.add_flag("--chat", c.chat,
                          "Read an OpenAI-style chat request (JSON: messages, tools, thinking, thinking_effort, ...) "
                          "and write the ids of its K3 chat prompt (SPEC section 5)");
  auto* cf = app.add_option("--chat-file", c.chat_file,
                            "Read the chat request from FILE instead of stdin (implies --chat; default: none)");
  app.add_flag("--text-out", c.text_out, "With --chat: write the rendered prompt text instead of ids (for reading)");
  for (CLI::Option* o : {ch, cf}) o->excludes(pf)->excludes(tx);
  app.add_option("--format", format, "ids: one id per line (default); line: all ids on one space-separated line")
      ->check(CLI::IsMember({"ids", "line"}));
  app.add_flag("--bos", c.bos, "Prepend the BOS id (tokenizer_config.json's bos_token); nothing is added otherwise");
  app.add_flag("--no-specials", c.no_specials,
               "Treat special-token names such as [EOS] in the text as plain text instead of special ids");
  app.add_flag("--count", c.count, "Print only the number of tokens");
  app.add_flag("--lossy", c.lossy, "Replace invalid UTF-8 with U+FFFD instead of failing");
  app.add_flag("--stats", c.stats, "Print vocabulary load time and encoding speed to stderr");
  app.footer(std::string("Exit status 4 with the byte offset if the input is not valid UTF-8 (unless --lossy), and\n"
                         "for a chat request that is invalid, naming the field (e.g. messages[2].role).\n") +
             k3::exit_codes_help());
  if (auto status = k3::parse_command_line(app, argc, argv, "k3-tokenize")) return *status;
  c.have_text = tx->count() > 0;
  c.layout = format == "line" ? k3::TokenIdLayout::kOneLine : k3::TokenIdLayout::kOnePerLine;
  return k3::run_tokenize_command(c);
}

}  // namespace

int main(int argc, char** argv) {
  return k3::run_tool("k3-tokenize", [&] { return run(argc, argv); });
}
