// lin(x, W) = x @ W^T over n token rows, for the weight formats the model
// uses. Thin wrappers over the kernels so the model code reads like the SPEC.
// Whole products go through the calling thread's compute backend
// (kernels/compute_backend.h: a device during a chunked prefill, with the
// CPU's bits); lin_rows, for one thread's share of rows, stays on the CPU.
#pragma once

#include <cstddef>
#include <functional>

#include "kernels/compute_backend.h"
#include "kernels/matmul.h"
#include "model/weights.h"

namespace k3 {

// Y[n, W.rows] = X[n, W.cols] @ W^T. A matrix that streams in row blocks is
// multiplied block by block as the blocks arrive: Y[t, r] depends on row r of
// W and row t of X alone (kernels/matmul.h), so the bits are those of one
// product over the whole matrix.
void lin_row_blocks(const Bf16Matrix& W, const float* X, size_t n, float* Y, ThreadPool* pool);

// The same product handed over as it is made, instead of into Y: for each
// row block [r0, r0 + m) of W as it arrives and each piece of at most 256
// rows [t0, t0 + k) of X, part[k, m] = Y[t0 .. t0 + k, r0 .. r0 + m) (the
// bits of lin_row_blocks), valid during the call. W must stream in row blocks.
using RowBlockPiece = std::function<void(size_t r0, size_t m, size_t t0, size_t k, const float* part)>;
void lin_row_block_pieces(const Bf16Matrix& W, const float* X, size_t n, const RowBlockPiece& on_piece,
                          ThreadPool* pool);

inline void lin(const Bf16Matrix& W, const float* X, size_t n, float* Y, ThreadPool* pool) {
  if (W.blocks) return lin_row_blocks(W, X, n, Y, pool);
  kernels::matmul_bf16_on_backend(W.data, static_cast<size_t>(W.rows), static_cast<size_t>(W.cols), X, n, Y, pool);
}

inline void lin(const Mxfp4Matrix& W, const float* X, size_t n, float* Y, ThreadPool* pool) {
  kernels::matmul_mxfp4_on_backend(W.packed, W.scales, static_cast<size_t>(W.rows), static_cast<size_t>(W.cols), X, n,
                                   Y, pool);
}

inline void lin(const ExpertMatrix& W, const float* X, size_t n, float* Y, ThreadPool* pool) {
  if (W.is_mxfp4) lin(W.mx, X, n, Y, pool);
  else lin(W.bf, X, n, Y, pool);
}

// Rows [b, e) of lin(W, X) into Y's [n, W.rows] layout, on the calling
// thread (kernels/matmul.h: the whole product's bits). Not for a matrix that
// streams in row blocks (W.blocks): its rows are only reachable block by block.
inline void lin_rows(const Bf16Matrix& W, const float* X, size_t n, float* Y, size_t b, size_t e) {
  kernels::matmul_bf16_rows(W.data, static_cast<size_t>(W.rows), static_cast<size_t>(W.cols), X, n, Y, b, e);
}
inline void lin_rows(const ExpertMatrix& W, const float* X, size_t n, float* Y, size_t b, size_t e) {
  if (!W.is_mxfp4) return lin_rows(W.bf, X, n, Y, b, e);
  kernels::matmul_mxfp4_rows(W.mx.packed, W.mx.scales, static_cast<size_t>(W.mx.rows), static_cast<size_t>(W.mx.cols),
                             X, n, Y, b, e);
}
inline bool has_row_access(const Bf16Matrix& W) { return W.blocks == nullptr; }
inline bool has_row_access(const ExpertMatrix& W) { return W.is_mxfp4 || W.bf.blocks == nullptr; }
inline size_t in_dim(const Bf16Matrix& W) { return static_cast<size_t>(W.cols); }
inline size_t in_dim(const ExpertMatrix& W) { return static_cast<size_t>(W.is_mxfp4 ? W.mx.cols : W.bf.cols); }

inline size_t out_dim(const Bf16Matrix& W) { return static_cast<size_t>(W.rows); }
inline size_t out_dim(const ExpertMatrix& W) { return static_cast<size_t>(W.is_mxfp4 ? W.mx.rows : W.bf.rows); }

}  // namespace k3
