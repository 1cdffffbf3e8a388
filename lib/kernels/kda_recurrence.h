// KDA's recurrence over n tokens of one sequence, every head: for each head
// h and token t in turn, kda_recurrent_step (kda_step.h) on head h's S with
// that token's q, k, v, g and beta. Heads are independent; tokens are not.
// The chunked prefill runs it on the calling thread's backend
// (compute_backend.h) when one takes it, with the CPU kernel's bits.
#pragma once

#include <cstddef>

namespace k3 {

class ThreadPool;

namespace kernels {

// S: [heads, dim, dim]; q (l2-normalised and scaled), k (l2-normalised), v,
// g (log decays) and o: [n, heads * dim]; beta: [n, heads], the sigmoid
// already applied.
void kda_recurrence_on_backend(float* S, const float* q, const float* k, const float* v, const float* g,
                               const float* beta, size_t heads, size_t dim, size_t n, float* o, ThreadPool* pool);

}  // namespace kernels
}  // namespace k3
