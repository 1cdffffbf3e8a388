#include "draft/draft_heads.h"

#include "kernels/bf16.h"
#include "kernels/matmul.h"

namespace k3 {

namespace {

void markov_row(const DSparkWeights& w, int32_t id, size_t rank, float* e) {
  const uint16_t* row = w.markov_w1.data + static_cast<size_t>(id) * rank;
  for (size_t r = 0; r < rank; ++r) e[r] = kernels::bf16_to_f32(row[r]);
}

}  // namespace

MarkovChain markov_chain_greedy(const DSparkConfig& c, const DSparkWeights& w, const float* base, size_t n,
                                int32_t anchor, ThreadPool* pool) {
  const size_t V = c.vocab_size, rank = c.markov_rank;
  std::vector<float> e(rank), bias(V);
  MarkovChain chain;
  int32_t prev = anchor;
  for (size_t k = 0; k < n; ++k) {
    markov_row(w, prev, rank, e.data());
    kernels::matmul_bf16(w.markov_w2.data, V, rank, e.data(), 1, bias.data(), pool);
    const float* b = base + k * V;
    size_t best = 0;
    float best_v = b[0] + bias[0];
    for (size_t v = 1; v < V; ++v) {
      const float x = b[v] + bias[v];
      if (x > best_v) best_v = x, best = v;
    }
    chain.prev.push_back(prev);
    prev = static_cast<int32_t>(best);
    chain.ids.push_back(prev);
  }
  return chain;
}

std::vector<float> confidence_logits(const DSparkConfig& c, const DSparkWeights& w, const float* z, size_t n,
                                     const std::vector<int32_t>& prev) {
  if (w.confidence_w.empty()) return {};
  const size_t H = c.hidden_size, rank = c.markov_rank;
  std::vector<float> e(rank), out(n);
  for (size_t k = 0; k < n; ++k) {
    markov_row(w, prev[k], rank, e.data());
    double acc = w.confidence_b;
    for (size_t j = 0; j < H; ++j) acc += static_cast<double>(w.confidence_w[j]) * z[k * H + j];
    for (size_t r = 0; r < rank; ++r) acc += static_cast<double>(w.confidence_w[H + r]) * e[r];
    out[k] = static_cast<float>(acc);
  }
  return out;
}

}  // namespace k3
