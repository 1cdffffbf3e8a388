// Per-token log-probabilities (--logprobs N): the chosen id's and the N most
// likely ids', as the OpenAI API reports them (logprobs / top_logprobs).
//
// They are the model's own distribution at that position: the log-softmax
// of the logits row as the engine computed it, before penalties,
// temperature and the top-k/top-p/min-p filters (so they do not depend on
// the sampling settings):
//   m = max l,  S = sum over ids in id order of portable_exp(l_j - m),
//   logprob_i = (l_i - m) - log(S)          (double)
// The top N are ordered by logit descending, ties to the lower id.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace k3 {

struct TokenLogprob {
  int32_t id = 0;
  double logprob = 0;
};

struct PositionLogprobs {
  int64_t position = 0;  // of the chosen id in the sequence
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;  // at most N, most likely first
};

PositionLogprobs logprobs_at(const float* logits, int64_t vocab, int32_t chosen, int top_n, int64_t position);

// One JSON line (with its "\n"):
// {"position":P,"id":I,"logprob":L,"top":[{"id":I,"logprob":L},...]}
// Numbers are written with 17 significant digits (they read back exactly).
std::string logprobs_json_line(const PositionLogprobs& p);

}  // namespace k3
