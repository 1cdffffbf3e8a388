// The tokenizer's own end-of-sequence token, for stop ids: SPEC section 3
// says generation stops at the ids generation_config.json names and at the
// tokenizer's eos_token (for K3, <|end_of_msg|> and [EOS]).
#pragma once

#include <string>

#include "tokenizer/vocabulary.h"

namespace k3 {

// The id of DIR/tokenizer_config.json's eos_token, kNoToken when the file
// or the key is absent. Reads only the config when it names the token in
// added_tokens_decoder (the usual case); loads the vocabulary otherwise.
// Throws Error(kBadModel) when the name is no token.
TokenId tokenizer_eos_id(const std::string& dir);

}  // namespace k3
