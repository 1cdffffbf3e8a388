#include "model/tokenizer_match.h"

#include <algorithm>

#include "common/error.h"

namespace k3 {

void check_tokenizer_matches(const ModelConfig& config, const std::string& model_dir, const Vocabulary& vocab,
                             const std::string& tok_dir) {
  auto refuse = [&](const std::string& what) {
    throw Error(ExitCode::kBadModel, "the tokenizer in " + tok_dir + " does not belong to the model in " + model_dir +
                                         ": " + what + " (pass the model's own directory as --tok)");
  };
  if (static_cast<int64_t>(vocab.size()) != config.vocab_size)
    refuse("its vocabulary has " + std::to_string(vocab.size()) + " ids (" + std::to_string(vocab.num_ranks()) +
           " ranks + 256 specials), the model's config says vocab_size " + std::to_string(config.vocab_size));
  const bool tok_has_bos = vocab.bos_id() != Vocabulary::kNoToken;
  if (config.bos_token_id >= 0 && tok_has_bos && static_cast<int64_t>(vocab.bos_id()) != config.bos_token_id)
    refuse("its BOS is id " + std::to_string(vocab.bos_id()) + ", the model's bos_token_id is " +
           std::to_string(config.bos_token_id));
  for (int eos : config.eos_token_ids) {
    if (eos < 0 || static_cast<uint32_t>(eos) >= vocab.size() || !vocab.is_special(static_cast<TokenId>(eos)))
      refuse("the model's EOS id " + std::to_string(eos) + " is not one of its special tokens");
  }
  if (vocab.eos_id() != Vocabulary::kNoToken && !config.eos_token_ids.empty() &&
      std::find(config.eos_token_ids.begin(), config.eos_token_ids.end(), static_cast<int>(vocab.eos_id())) ==
          config.eos_token_ids.end())
    refuse("its EOS is id " + std::to_string(vocab.eos_id()) + ", which the model's config does not list as an EOS id");
}

void check_tokenizer_covers(const ModelConfig& config, const std::string& model_dir, const Vocabulary& vocab,
                            const std::string& tok_dir) {
  if (config.vocab_size <= static_cast<int64_t>(vocab.size())) return;
  throw Error(ExitCode::kBadModel, "the tokenizer in " + tok_dir + " has " + std::to_string(vocab.size()) +
                                       " ids, fewer than the " + std::to_string(config.vocab_size) +
                                       " of the model in " + model_dir +
                                       " (config.json vocab_size): the model could choose an id with no text; "
                                       "use a tokenizer of " +
                                       std::to_string(config.vocab_size) + " ids, the model's own");
}

}  // namespace k3
