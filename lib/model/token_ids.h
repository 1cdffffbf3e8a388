// Token ids from outside (a prompt, a state file's pending ids) checked
// against the model before a pass reads them: the forward pass checks every
// input, and a server checks each request's own prompt so that a bad id ends
// only that request (defined in forward_pass.cpp).
#pragma once

#include <cstdint>
#include <span>

#include "model/config.h"

namespace k3 {

// Checks ids against the vocabulary; Error(kBadInput) names the first bad one.
void check_token_ids(const ModelConfig& config, std::span<const int32_t> ids);

}  // namespace k3
