#include "model/linear.h"

#include <algorithm>
#include <vector>

#include "common/error.h"

namespace k3 {

void lin_row_block_pieces(const Bf16Matrix& W, const float* X, size_t n, const RowBlockPiece& on_piece,
                          ThreadPool* pool) {
  const size_t rows = static_cast<size_t>(W.rows);
  std::vector<float> part;
  size_t covered = 0;  // blocks must tile [0, rows) in order: no output is left unwritten
  W.blocks->for_each_block([&](int64_t first_row, const Bf16Matrix& B) {
    const size_t r0 = static_cast<size_t>(first_row), m = static_cast<size_t>(B.rows);
    if (r0 != covered || m == 0 || r0 + m > rows || B.cols != W.cols || !B.data)
      throw Error(ExitCode::kInternal, "row blocks do not tile the matrix");
    covered = r0 + m;
    // A piece of at most kPieceTokens rows of X at a time, so a chunk's long
    // sub-batch (ForwardPass::set_chunk_sub_batch) stages no more than a
    // batch of 256 did. An output's bits do not depend on the rows beside it.
    constexpr size_t kPieceTokens = 256;
    part.resize(std::min(n, kPieceTokens) * m);
    for (size_t t0 = 0; t0 < n; t0 += kPieceTokens) {
      const size_t k = std::min(kPieceTokens, n - t0);
      kernels::matmul_bf16_on_backend(B.data, m, static_cast<size_t>(B.cols), X + t0 * static_cast<size_t>(B.cols), k,
                                      part.data(), pool);
      on_piece(r0, m, t0, k, part.data());
    }
  });
  if (covered != rows) throw Error(ExitCode::kInternal, "row blocks do not cover the matrix");
}

void lin_row_blocks(const Bf16Matrix& W, const float* X, size_t n, float* Y, ThreadPool* pool) {
  // A block's outputs are strided in Y: each piece is copied into place.
  const size_t rows = static_cast<size_t>(W.rows);
  lin_row_block_pieces(
      W, X, n,
      [&](size_t r0, size_t m, size_t t0, size_t k, const float* part) {
        for (size_t t = 0; t < k; ++t) std::copy_n(part + t * m, m, Y + (t0 + t) * rows + r0);
      },
      pool);
}

}  // namespace k3
