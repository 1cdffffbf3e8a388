#include "kernels/short_conv.h"

#include <algorithm>

#include "kernels/activations.h"
#include "kernels/bf16.h"

namespace k3::kernels {

void short_conv_silu(const uint16_t* w, float* carry, float* raw, size_t n, size_t channels, size_t K, float* ext) {
  // ext = [carry rows, raw rows]: token t's window is ext rows t..t+K-1.
  const size_t history = (K - 1) * channels;
  std::copy(carry, carry + history, ext);
  std::copy(raw, raw + n * channels, ext + history);
  for (size_t t = 0; t < n; ++t) {
    for (size_t c = 0; c < channels; ++c) {
      float acc = 0;
      for (size_t j = 0; j < K; ++j) acc += bf16_to_f32(w[c * K + j]) * ext[(t + j) * channels + c];
      raw[t * channels + c] = silu(acc);
    }
  }
  std::copy(ext + n * channels, ext + n * channels + history, carry);
}

}  // namespace k3::kernels
