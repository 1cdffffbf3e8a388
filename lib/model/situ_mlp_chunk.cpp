#include "model/situ_mlp_chunk.h"

#include <algorithm>

#include "model/linear.h"

namespace k3 {

void situ_mlp_chunk(const DenseMlpWeights& w, const SituParams& p, const float* x, size_t n, float* out,
                    ThreadPool* pool, float* scratch, size_t piece) {
  const size_t inter = out_dim(w.gate_proj), in = in_dim(w.gate_proj), width = out_dim(w.down_proj);
  piece = std::max<size_t>(1, piece);
  if (has_row_access(w.gate_proj) && has_row_access(w.up_proj)) {
    // Resident: situ_mlp a piece of rows at a time (a row's bits do not
    // depend on the rows beside it).
    for (size_t t0 = 0; t0 < n; t0 += piece)
      situ_mlp(w, p, x + t0 * in, std::min(piece, n - t0), out + t0 * width, pool, scratch);
    return;
  }
  float* g = scratch;
  float* u = scratch + n * inter;  // one piece of rows
  lin(w.gate_proj, x, n, g, pool);
  if (!has_row_access(w.up_proj)) {
    // Each piece of up's outputs into g's same columns as it arrives.
    lin_row_block_pieces(
        w.up_proj, x, n,
        [&](size_t r0, size_t m, size_t t0, size_t k, const float* part) {
          for (size_t t = 0; t < k; ++t) kernels::situ_span(g + (t0 + t) * inter + r0, part + t * m, m, p);
        },
        pool);
  } else {
    for (size_t t0 = 0; t0 < n; t0 += piece) {
      const size_t k = std::min(piece, n - t0);
      lin(w.up_proj, x + t0 * in, k, u, pool);
      kernels::situ_inplace(g + t0 * inter, u, k * inter, p, pool);
    }
  }
  lin(w.down_proj, g, n, out, pool);
}

}  // namespace k3
