// The dense SiTU MLP over a layer-major chunk's sub-batch (model/
// prefill_chunk.h), in less memory than situ_mlp's g and u, [n, inter] each:
// at K3's geometry (inter 33,792) those were 270 kB a row, the largest op
// area of a long sub-batch but KDA's. Neither way reads a weight from disk
// more often than situ_mlp, and the bits are its own.
#pragma once

#include <algorithm>
#include <cstddef>

#include "model/situ_mlp.h"

namespace k3 {

// Floats situ_mlp_chunk takes over n rows of width `inter` with pieces of
// `piece` rows: g [n, inter] and one piece of u.
inline size_t situ_chunk_scratch_floats(size_t n, size_t inter, size_t piece) {
  return n * inter + std::min(n, piece) * inter;
}

// x[n, in] -> out[n, out] as situ_mlp, with `scratch` of
// situ_chunk_scratch_floats(n, inter, piece) floats. Resident gate and up
// go through in pieces of `piece` rows (memory, not disk, is read again);
// an up projection streamed in row blocks is applied to g block by block as
// it arrives (kernels::situ_span's bits do not depend on where a span
// starts), so no u [n, inter] is held.
void situ_mlp_chunk(const DenseMlpWeights& w, const SituParams& p, const float* x, size_t n, float* out,
                    ThreadPool* pool, float* scratch, size_t piece);

}  // namespace k3
