// Where the Hugging Face access token comes from, in the order the Hub's own
// client looks: --token, $HF_TOKEN, the file $HF_TOKEN_PATH, then $HF_HOME/token
// ($HF_HOME defaults to $XDG_CACHE_HOME/huggingface, then
// ~/.cache/huggingface), so a `huggingface-cli login` is enough.
//
// Whatever its source, the token is checked before any request: at most
// kMaxHubTokenBytes, printable ASCII on one line. A token file must be a
// regular file (a device or FIFO is refused without being read). Errors name
// the source, never the token: exit 2 for --token and $HF_TOKEN, exit 4 for
// a file.
#pragma once

#include <cstddef>
#include <string>

namespace k3 {

inline constexpr size_t kMaxHubTokenBytes = 4096;

struct HubToken {
  std::string value;   // empty: no token (anonymous requests)
  std::string origin;  // "--token", "$HF_TOKEN" or the file it was read from; never the token
};

// Throws k3::Error (exit 2 or 4, naming token.origin) for a token that is
// too long or holds a line break, a control character, a space or a
// non-ASCII byte.
void check_hub_token(const HubToken& token);

// `getenv` is a parameter so tests can give their own environment.
HubToken find_hub_token(const std::string& token_flag, const char* (*getenv)(const char*));

}  // namespace k3
