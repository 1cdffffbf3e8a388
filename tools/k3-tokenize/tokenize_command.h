// What k3-tokenize does once its command line is read: load the vocabulary,
// read the whole input (--text, a file or stdin), check its UTF-8, encode it
// (as text, or as a chat request rendered to its K3 prompt) and write the ids
// only when all of them exist, so on any error stdout stays empty.
#pragma once

#include <string>

#include "cli/token_id_writer.h"

namespace k3 {

struct TokenizeCommand {
  std::string tokenizer_dir;
  std::string model_dir;    // --model: refuse a tokenizer that disagrees with its config
  std::string prompt_file;  // empty: stdin (unless have_text or chat_file)
  std::string text;         // --text, used when have_text
  std::string chat_file;    // implies chat
  bool have_text = false;
  bool chat = false;         // input is an OpenAI-style chat request
  bool text_out = false;     // chat: write the rendered prompt, not ids
  bool bos = false;          // prepend the BOS id
  bool no_specials = false;  // special-token names are plain text
  bool lossy = false;        // invalid UTF-8 becomes U+FFFD
  bool count = false;        // print only the number of ids
  bool stats = false;        // load time and encoding speed on stderr
  TokenIdLayout layout = TokenIdLayout::kOnePerLine;
};

// Throws Error: kUsage for flags that do not go together, kBadInput for
// unreadable input, invalid UTF-8 (with its byte offset) or an invalid chat
// request, kBadModel for a tokenizer directory that cannot serve the request.
int run_tokenize_command(TokenizeCommand command);

}  // namespace k3
