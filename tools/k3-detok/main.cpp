// k3-detok: Kimi-K3 token ids on stdin -> text on stdout, as they arrive.
//
// Ids are read as soon as they are complete (whitespace-separated, one per
// line or several per line) and each one's text is written and flushed at
// once, so `k3-forward ... | k3-detok` shows text while it is generated. A
// token that ends inside a UTF-8 character is held back until the next one
// completes it; invalid bytes become U+FFFD exactly as Python's
// bytes.decode("utf-8", errors="replace") would.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/cli_parse.h"
#include "common/error.h"
#include "common/file.h"
#include "common/tool_main.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/vocabulary.h"

namespace {

void write_all_stdout(const char* p, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t w = ::write(1, p + done, n - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw k3::Error(k3::ExitCode::kIo, std::string("cannot write stdout: ") + std::strerror(errno));
    }
    done += static_cast<size_t>(w);
  }
}

bool is_separator(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

int run(int argc, char** argv) {
  CLI::App app{
      "Turns Kimi-K3 token ids back into text, writing each token's text as soon as its id arrives.\n"
      "Reads ids from stdin (or FILE; - is stdin), one per line or separated by spaces.\n"
      "Example: k3-tokenize --tok ~/k3model < prompt.txt | k3-forward ~/k3model --gen 64 | k3-detok --tok ~/k3model",
      "k3-detok"};
  std::string tok_dir, ids_file = "-";
  bool raw = false, skip_special = false;
  app.add_option("--tok", tok_dir, "Tokenizer directory holding tiktoken.model and tokenizer_config.json "
                                   "(usually the model directory)")
      ->required();
  app.add_option("FILE", ids_file, "Read the ids from FILE instead of stdin (- is stdin)");
  app.add_flag("--raw", raw, "Write the token bytes unchanged (no UTF-8 repair; output may be invalid UTF-8)");
  app.add_flag("--skip-special", skip_special, "Drop special tokens instead of printing their names, e.g. [EOS]");
  app.footer(std::string("Exit status 4 names the offending id and its position (1-based) in the input.\n") +
             k3::exit_codes_help());
  if (auto status = k3::parse_command_line(app, argc, argv, "k3-detok")) return *status;

  const k3::Vocabulary vocab = k3::Vocabulary::load(tok_dir);
  k3::InputFd input = k3::InputFd::open(ids_file, "ids file");
  k3::StreamDecoder decoder;
  std::string word;  // the id being read (may span reads)
  std::string out;
  uint64_t position = 0;

  auto emit = [&]() {
    ++position;
    uint64_t id = 0;
    bool numeric = word.size() <= 19;
    for (char c : word) {
      if (c < '0' || c > '9') numeric = false;
      if (!numeric) break;
      id = id * 10 + static_cast<uint64_t>(c - '0');
    }
    if (!numeric)
      throw k3::Error(k3::ExitCode::kBadInput, "\"" + word.substr(0, 40) + "\" at position " + std::to_string(position) +
                                                    " is not a token id (expected decimal ids separated by whitespace)");
    if (id >= vocab.size())
      throw k3::Error(k3::ExitCode::kBadInput, "token id " + word + " at position " + std::to_string(position) +
                                                    " is outside the vocabulary (0.." + std::to_string(vocab.size() - 1) +
                                                    "): was it produced with another tokenizer?");
    word.clear();
    auto tid = static_cast<k3::TokenId>(id);
    if (skip_special && vocab.is_special(tid)) return;
    std::string_view bytes = vocab.bytes(tid);
    if (raw) {
      write_all_stdout(bytes.data(), bytes.size());
      return;
    }
    out.clear();
    decoder.push(bytes, out);
    if (!out.empty()) write_all_stdout(out.data(), out.size());
  };

  char buf[1 << 14];
  // Ids are decoded as they arrive: text appears while the producer runs.
  while (size_t r = k3::read_some(input.fd(), buf, sizeof buf, input.name())) {
    for (size_t i = 0; i < r; ++i) {
      if (is_separator(buf[i])) {
        if (!word.empty()) emit();
      } else {
        word.push_back(buf[i]);
      }
    }
  }
  if (!word.empty()) emit();
  out.clear();
  decoder.finish(out);
  if (!out.empty()) write_all_stdout(out.data(), out.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return k3::run_tool("k3-detok", [&] { return run(argc, argv); });
}
