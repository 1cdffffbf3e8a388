// The synthetic checkpoint's tokenizer files (tiktoken.model and
// tokenizer_config.json), in the formats of the real K3 tokenizer.
#pragma once

#include <cstdint>
#include <string>

namespace k3 {

// The generated tokenizer: 256 single-byte tokens, then unique
// concatenations up to vocab_size - 256 ordinary tokens, and the 256
// specials named as in K3 (tokenizer_config.json added_tokens_decoder).
std::string synth_tiktoken_model(int ordinary_tokens, uint64_t seed);
std::string synth_tokenizer_config_json(int vocab_size);

}  // namespace k3
