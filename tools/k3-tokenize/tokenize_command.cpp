#include "tokenize_command.h"

#include <chrono>
#include <cstdio>
#include <vector>

#include "chat/xtml_renderer.h"
#include "cli/stdout_writer.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/file.h"
#include "model/config.h"
#include "model/tokenizer_match.h"
#include "platform/thread_cpu_time.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace k3 {

namespace {

using Clock = std::chrono::steady_clock;

std::string command_input(const TokenizeCommand& c) {
  if (c.have_text) return c.text;
  if (!c.prompt_file.empty() || !c.chat_file.empty())
    return c.chat ? read_input(c.chat_file, "chat file") : read_input(c.prompt_file, "prompt file");
  return read_all(0, "stdin");
}

}  // namespace

int run_tokenize_command(TokenizeCommand c) {
  c.chat = c.chat || !c.chat_file.empty();
  if (c.chat && (c.bos || c.no_specials || c.lossy))
    throw Error(ExitCode::kUsage,
                "--chat renders the request's own markup: --bos, --no-specials and --lossy "
                "do not apply");
  if (c.text_out && !c.chat) throw Error(ExitCode::kUsage, "--text-out shows a rendered chat prompt: add --chat");

  auto t0 = Clock::now();
  Tokenizer tok = Tokenizer::load(c.tokenizer_dir);
  double load_s = seconds_since(t0);
  if (!c.model_dir.empty())
    check_tokenizer_matches(load_model_config(c.model_dir), c.model_dir, tok.vocab(), c.tokenizer_dir);

  std::string input = command_input(c);
  size_t bad = utf8::find_invalid(input);
  if (bad != utf8::kNotFound) {
    if (!c.lossy || c.chat)
      throw Error(ExitCode::kBadInput, "input is not valid UTF-8 at byte offset " + std::to_string(bad) +
                                           " (fix the text, or pass --lossy to replace bad bytes with U+FFFD)");
    input = utf8::replace_invalid(input);
  }

  std::vector<TokenId> ids;
  if (c.bos) {
    if (tok.vocab().bos_id() == Vocabulary::kNoToken)
      throw Error(ExitCode::kBadModel,
                  c.tokenizer_dir + "/tokenizer_config.json names no bos_token, so --bos has no id");
    ids.push_back(tok.vocab().bos_id());
  }
  auto t1 = Clock::now();
  double c1 = thread_cpu_seconds();
  if (c.chat) {
    const RenderedChat rendered = render_chat(parse_chat_request(input));
    if (c.text_out) {
      write_all_stdout(segments_text(rendered.segments));
      return 0;
    }
    ids = encode_chat(tok, rendered).ids;
  } else {
    tok.encode(input, !c.no_specials, ids);
  }
  double encode_s = seconds_since(t1);
  double encode_cpu_s = thread_cpu_seconds() - c1;

  write_all_stdout(c.count ? std::to_string(ids.size()) + "\n" : format_token_ids(ids, c.layout));
  if (c.stats) {
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

}  // namespace k3
