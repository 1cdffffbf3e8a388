// Does a tokenizer directory belong to the model? A vocabulary from another
// model tokenizes without complaint and the model then computes garbage, so
// the tools that are given both (--tok next to a model) compare them first.
#pragma once

#include <string>

#include "model/config.h"
#include "tokenizer/vocabulary.h"

namespace k3 {

// Throws kBadModel naming both directories and the first disagreement: the
// vocabulary size (tiktoken ranks + 256 specials vs config vocab_size), the
// BOS id, or an EOS id the config names that the tokenizer does not.
void check_tokenizer_matches(const ModelConfig& config, const std::string& model_dir, const Vocabulary& vocab,
                             const std::string& tok_dir);

}  // namespace k3
