// KDA's short convolution: depthwise causal conv (PyTorch Conv1d with K-1
// zeros padded on the left) followed by silu, over n tokens of `channels`
// raw values, in place. Tap w[c, K-1] multiplies the current input, w[c, 0]
// the oldest. `carry` holds the K-1 previous raw rows, oldest first
// ((K-1) * channels floats), and is advanced past the n tokens, so n tokens
// in one call and one at a time give the same bits.
#pragma once

#include <cstddef>
#include <cstdint>

namespace k3 {
class ThreadPool;
}

namespace k3::kernels {

// `w` is [channels, K] BF16 bits; `ext` is scratch of (K - 1 + n) * channels
// floats (the caller's, so the conv allocates nothing). Channels are split
// over `pool` (inline when null); each output is computed once by the same
// code whatever the split, so the bits do not depend on the thread count.
void short_conv_silu(const uint16_t* w, float* carry, float* raw, size_t n, size_t channels, size_t K, float* ext,
                     ThreadPool* pool = nullptr);

}  // namespace k3::kernels
