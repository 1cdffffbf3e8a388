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

// `w` is [channels, K] BF16 bits; `next_carry` is scratch of (K - 1) *
// channels floats (the caller's, so the conv allocates nothing): the rows
// are convolved in place from the last down (output row t reads input rows
// t-K+1..t, which are still raw), so the raw rows that become the new carry
// are saved there first. Channels are split over `pool` (inline when null);
// each output is computed once by the same code whatever the split, so the
// bits do not depend on the thread count.
void short_conv_silu(const uint16_t* w, float* carry, float* raw, size_t n, size_t channels, size_t K,
                     float* next_carry, ThreadPool* pool = nullptr);

// The same through the calling thread's compute backend (the chunk's
// device, kernels/compute_backend.h) when one takes it, else on the CPU.
void short_conv_silu_on_backend(const uint16_t* w, float* carry, float* raw, size_t n, size_t channels, size_t K,
                                float* next_carry, ThreadPool* pool);

}  // namespace k3::kernels
