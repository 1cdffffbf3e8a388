// OpenAI's logit_bias: a value in [-100, 100] added to an id's logit before
// the id is chosen (greedy or sampled), after the penalties (penalties.h).
// -100 in practice bans an id and +100 forces it; values between shift its
// odds. The bias changes the choice only: the reported log-probabilities
// (logprobs.h) stay the model's own distribution.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace k3 {

struct LogitBias {
  int32_t id = 0;
  float bias = 0;  // in [kMinLogitBias, kMaxLogitBias]
};

constexpr double kMinLogitBias = -100.0;
constexpr double kMaxLogitBias = 100.0;

// logits[id] += bias for each entry, in order (an id given twice gets both).
// Every id must be below `vocab` (the caller checks; kInternal otherwise).
void apply_logit_bias(float* logits, int64_t vocab, std::span<const LogitBias> biases);

}  // namespace k3
