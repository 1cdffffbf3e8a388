// The draft's two heads (docs/dspark.md).
//
// Markov head: a rank-r bigram bias added to row k's base logits, keyed by
// the token before the one row k predicts:
//   bias(prev) = markov_w2 . markov_w1[prev]         [vocab]
//   d_k = argmax(base_k + bias(prev_k)),  prev_0 = anchor, prev_k = d_{k-1}
// The chain is greedy (ties to the lower id). Sampled generation drafts
// greedily too: a draft is kept only when it equals the position-keyed
// sample, so output never depends on how drafts were chosen.
//
// Confidence head: logit_k = w . [z_k ; markov_w1[prev_k]] + b, the draft's
// own estimate (through a sigmoid) that row k's token will be accepted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "draft/dspark_config.h"
#include "draft/dspark_weights.h"

namespace k3 {

class ThreadPool;

struct MarkovChain {
  std::vector<int32_t> ids;   // d_0 .. d_{n-1}
  std::vector<int32_t> prev;  // prev_0 .. prev_{n-1} (anchor, d_0, ..)
};

// base [n][vocab] -> the greedy chain from `anchor`.
MarkovChain markov_chain_greedy(const DSparkConfig& config, const DSparkWeights& w, const float* base, size_t n,
                                int32_t anchor, ThreadPool* pool);

// Confidence logits of n final-normed rows z [n][hidden] with their prev ids
// (empty when the checkpoint has no confidence head).
std::vector<float> confidence_logits(const DSparkConfig& config, const DSparkWeights& w, const float* z, size_t n,
                                     const std::vector<int32_t>& prev);

}  // namespace k3
