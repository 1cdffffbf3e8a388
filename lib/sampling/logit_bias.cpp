#include "sampling/logit_bias.h"

#include <string>

#include "common/error.h"

namespace k3 {

void apply_logit_bias(float* logits, int64_t vocab, std::span<const LogitBias> biases) {
  for (const LogitBias& b : biases) {
    if (b.id < 0 || b.id >= vocab)
      throw Error(ExitCode::kInternal, "logit bias: id " + std::to_string(b.id) + " is outside the vocabulary");
    logits[b.id] += b.bias;
  }
}

}  // namespace k3
