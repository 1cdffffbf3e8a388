// Where the Hugging Face access token comes from, in the order the Hub's own
// client looks: --token, $HF_TOKEN, the file $HF_TOKEN_PATH, then $HF_HOME/token
// ($HF_HOME defaults to $XDG_CACHE_HOME/huggingface, then
// ~/.cache/huggingface), so a `huggingface-cli login` is enough.
#pragma once

#include <string>

namespace k3 {

struct HubToken {
  std::string value;   // empty: no token (anonymous requests)
  std::string origin;  // "--token", "$HF_TOKEN" or the file it was read from; never the token
};

// `getenv` is a parameter so tests can give their own environment.
HubToken find_hub_token(const std::string& token_flag, const char* (*getenv)(const char*));

}  // namespace k3
