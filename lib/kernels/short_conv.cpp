#include "kernels/short_conv.h"

#include <algorithm>

#include "common/thread_pool.h"
#include "kernels/activations.h"
#include "kernels/bf16.h"
#include "kernels/compute_backend.h"

namespace k3::kernels {

namespace {

// Channel-token outputs per parallel_for chunk (K taps and a silu each): a
// chunk of this many is tens of microseconds, worth waking a thread.
constexpr size_t kConvGrain = 16384;

}  // namespace

void short_conv_silu(const uint16_t* w, float* carry, float* raw, size_t n, size_t channels, size_t K,
                     float* next_carry, ThreadPool* pool) {
  // The input is ext = [carry rows, raw rows] (K - 1 + n rows); token t's
  // window is ext rows t..t+K-1. Threads take disjoint channel ranges.
  const size_t H = K - 1;
  auto body = [&](size_t c0, size_t c1) {
    auto ext = [&](size_t s, size_t c) { return s < H ? carry[s * channels + c] : raw[(s - H) * channels + c]; };
    // The new carry, ext rows n..n+K-2, before the outputs overwrite them.
    for (size_t r = 0; r < H; ++r)
      for (size_t c = c0; c < c1; ++c) next_carry[r * channels + c] = ext(n + r, c);
    // Last row first: rows below t are still raw when row t is written.
    for (size_t t = n; t-- > 0;) {
      for (size_t c = c0; c < c1; ++c) {
        float acc = 0;
        if (t >= H) {
          const float* x = raw + (t - H) * channels + c;
          for (size_t j = 0; j < K; ++j) acc += bf16_to_f32(w[c * K + j]) * x[j * channels];
        } else {
          for (size_t j = 0; j < K; ++j) acc += bf16_to_f32(w[c * K + j]) * ext(t + j, c);
        }
        raw[t * channels + c] = silu(acc);
      }
    }
    for (size_t r = 0; r < H; ++r)
      std::copy(next_carry + r * channels + c0, next_carry + r * channels + c1, carry + r * channels + c0);
  };
  parallel_for(pool, channels, std::max<size_t>(1, kConvGrain / std::max<size_t>(n, 1)), body);
}

void short_conv_silu_on_backend(const uint16_t* w, float* carry, float* raw, size_t n, size_t channels, size_t K,
                                float* next_carry, ThreadPool* pool) {
  ComputeBackend* backend = current_compute_backend();
  if (backend && backend->short_conv_silu(w, carry, raw, n, channels, K)) return;
  short_conv_silu(w, carry, raw, n, channels, K, next_carry, pool);
}

}  // namespace k3::kernels
