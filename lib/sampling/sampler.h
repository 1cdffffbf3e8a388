// Layer sampling: turning logits into the next token and deciding when to stop.
//
// Choosing the next token from a row of logits: greedy or sampled.
//
// Greedy (temperature 0, the default): the id with the largest logit; ties go
// to the lower id. No random number is drawn.
//
// Penalties first (penalties.h), when any is given, then the logit biases
// (logit_bias.h): greedy and sampling then see the adjusted copy of the row.
//
// A mask (token_mask.h: structured output) limits both to its allowed ids:
// greedy takes the allowed id with the largest logit, sampling starts from
// the allowed ids only; the steps are otherwise unchanged.
//
// Sampled (temperature > 0), in this fixed order:
//   1. candidates = every id (every allowed id under a mask), sorted by (logit descending, id ascending);
//      this order is total, so it does not depend on the sort algorithm.
//   2. temperature: z_i = double(logit_i) / temperature.
//   3. top-k (k > 0): keep the first k candidates.
//   4. softmax in double, in candidate order: w_i = portable_exp(z_i - z_0),
//      p_i = w_i / (w_0 + w_1 + ... summed left to right).
//   5. top-p (p < 1): keep the shortest prefix whose running sum of p_i
//      (left to right) reaches top_p; at least one candidate.
//   6. min-p (m > 0): keep the prefix of candidates with p_i >= m * p_0.
//   7. draw u in [0,1) for the position (sample_rng.h); with W = sum of the
//      kept w_i (left to right), pick the first kept i whose running sum of w
//      exceeds u * W (the last kept one if rounding leaves none).
// Every step uses IEEE basic operations on the same inputs, so a seed gives
// the same ids on every machine, thread count and memory budget.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "sampling/logit_bias.h"
#include "sampling/penalties.h"
#include "sampling/sample_rng.h"
#include "sampling/token_mask.h"

namespace k3 {

struct SamplingParams {
  double temperature = 0.0;  // 0: greedy
  int32_t top_k = 0;         // 0: off
  double top_p = 1.0;        // 1: off; otherwise in (0, 1)
  double min_p = 0.0;        // 0: off; otherwise in (0, 1]
  uint64_t seed = 0;
  // Kept in state files too (a PENA section): a continuation samples as one run would.
  PenaltyParams penalties;
  // Added to the row after the penalties (logit_bias.h); not kept in state files.
  std::vector<LogitBias> logit_bias;

  bool greedy() const { return temperature == 0.0; }
};

// Throws k3::Error(kUsage) naming the flag when a value is out of range.
void validate_sampling_params(const SamplingParams& params);

struct Candidate {
  int32_t id;
  double weight;       // w_i (unnormalised)
  double probability;  // w_i / sum of kept w
};

// Argmax with ties to the lower id. Throws k3::Error(kInternal) on a NaN or
// infinite logit (the engine never produces one; sampling it would be garbage).
// Under a mask, the allowed id with the largest logit (kInternal when none is allowed).
int32_t greedy_token(const float* logits, int64_t vocab, const TokenMask* mask = nullptr);

// Steps 1-6: the kept candidates in order, probabilities renormalised over them.
std::vector<Candidate> sampling_candidates(const float* logits, int64_t vocab, const SamplingParams& params,
                                           const TokenMask* mask = nullptr);

// Step 7 for a given u in [0, 1).
int32_t pick_candidate(const std::vector<Candidate>& kept, double u);

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);
  const SamplingParams& params() const { return params_; }

  // The token for sequence position `position` (the count of tokens before
  // it); `sequence` holds those tokens (used by the penalties only).
  // `mask`, when given, limits the choice to its allowed ids.
  int32_t next(const float* logits, int64_t vocab, int64_t position, std::span<const int32_t> sequence = {},
               const TokenMask* mask = nullptr);

 private:
  SamplingParams params_;
  SampleRng rng_;
  std::vector<float> penalised_;
};

}  // namespace k3
