// k3-forward --batch FILE: one prompt per line of ids, prefilled one after
// the other, then decoded together (lib/generate/batch_generation.h), one
// output line per prompt (batch_output.h). Returns the tool's exit status
// (130 when interrupted: the finished lines are written, the others are cut
// short but written too, in order).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "cli/model_options.h"
#include "engine/session.h"

namespace k3 {

// --batch runs its own prompts: with a --batch file, none of the per-prompt
// flags (`inputs` not empty, or `other_flags`) may be given (kUsage).
void check_batch_alone(const std::string& batch_file, std::initializer_list<const std::string*> inputs,
                       bool other_flags);

// The prompts of a --batch file: one per line, none empty (kBadInput naming
// the file and line; blank lines at the end are ignored).
std::vector<std::vector<int32_t>> read_batch_file(const std::string& path, int64_t vocab_size);

// Loads the weights for the batch (the memory plan counts every sequence's
// state and refuses a batch that does not fit, exit 6, saying how many would)
// and runs it.
int run_batch(const ModelConfig& config, ModelOptions& options, const GenerationOptions& generation,
              const std::vector<std::vector<int32_t>>& prompts, int64_t max_new);

}  // namespace k3
