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

// The check every tool that turns the model's ids into text makes, --tok or
// not: a model with more ids than its tokenizer can sample an id that has no
// text (a checkpoint synthesized at a larger vocabulary beside a smaller
// tokenizer). Throws kBadModel naming both sizes and the directories.
void check_tokenizer_covers(const ModelConfig& config, const std::string& model_dir, const Vocabulary& vocab,
                            const std::string& tok_dir);

}  // namespace k3
