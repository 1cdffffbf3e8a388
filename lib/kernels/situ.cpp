#include "kernels/situ.h"

#include <cmath>

#include "common/thread_pool.h"
#include "kernels/activations.h"

namespace k3::kernels {

namespace {

// Elements per parallel_for chunk: three transcendental calls each, so a
// chunk of this many is ~100 us, well above the cost of waking a thread.
constexpr size_t kSituGrain = 4096;

}  // namespace

float situ(float g, float u, const SituParams& p) {
  const float a = p.beta * std::tanh(g / p.beta) * sigmoid(g);
  const float up = p.has_linear_beta ? p.linear_beta * std::tanh(u / p.linear_beta) : u;
  return a * up;
}

void situ_inplace(float* g, const float* u, size_t count, const SituParams& p, ThreadPool* pool) {
  auto body = [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) g[i] = situ(g[i], u[i], p);
  };
  if (pool) pool->parallel_for(count, kSituGrain, body);
  else body(0, count);
}

}  // namespace k3::kernels
