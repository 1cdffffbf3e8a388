#include "kernels/short_conv.h"

#include <algorithm>

#include "common/thread_pool.h"
#include "kernels/activations.h"
#include "kernels/bf16.h"

namespace k3::kernels {

namespace {

// Channel-token outputs per parallel_for chunk (K taps and a silu each): a
// chunk of this many is tens of microseconds, worth waking a thread.
constexpr size_t kConvGrain = 16384;

}  // namespace

void short_conv_silu(const uint16_t* w, float* carry, float* raw, size_t n, size_t channels, size_t K, float* ext,
                     ThreadPool* pool) {
  // ext = [carry rows, raw rows]: token t's window is ext rows t..t+K-1.
  const size_t history = (K - 1) * channels;
  std::copy(carry, carry + history, ext);
  std::copy(raw, raw + n * channels, ext + history);
  // Threads take disjoint channel ranges; ext is only read here.
  auto body = [&](size_t c0, size_t c1) {
    for (size_t t = 0; t < n; ++t) {
      for (size_t c = c0; c < c1; ++c) {
        float acc = 0;
        for (size_t j = 0; j < K; ++j) acc += bf16_to_f32(w[c * K + j]) * ext[(t + j) * channels + c];
        raw[t * channels + c] = silu(acc);
      }
    }
  };
  parallel_for(pool, channels, std::max<size_t>(1, kConvGrain / std::max<size_t>(n, 1)), body);
  std::copy(ext + n * channels, ext + n * channels + history, carry);
}

}  // namespace k3::kernels
