// lin(x, W) = x @ W^T over n token rows, for the weight formats the model
// uses. Thin wrappers over the kernels so the model code reads like the SPEC.
#pragma once

#include <cstddef>

#include "kernels/matmul.h"
#include "model/weights.h"

namespace k3 {

// Y[n, W.rows] = X[n, W.cols] @ W^T. A matrix that streams in row blocks is
// multiplied block by block as the blocks arrive: Y[t, r] depends on row r of
// W and row t of X alone (kernels/matmul.h), so the bits are those of one
// product over the whole matrix.
void lin_row_blocks(const Bf16Matrix& W, const float* X, size_t n, float* Y, ThreadPool* pool);

inline void lin(const Bf16Matrix& W, const float* X, size_t n, float* Y, ThreadPool* pool) {
  if (W.blocks) return lin_row_blocks(W, X, n, Y, pool);
  kernels::matmul_bf16(W.data, static_cast<size_t>(W.rows), static_cast<size_t>(W.cols), X, n, Y, pool);
}

inline void lin(const Mxfp4Matrix& W, const float* X, size_t n, float* Y, ThreadPool* pool) {
  kernels::matmul_mxfp4(W.packed, W.scales, static_cast<size_t>(W.rows), static_cast<size_t>(W.cols), X, n, Y, pool);
}

inline void lin(const ExpertMatrix& W, const float* X, size_t n, float* Y, ThreadPool* pool) {
  if (W.is_mxfp4) lin(W.mx, X, n, Y, pool);
  else lin(W.bf, X, n, Y, pool);
}

inline size_t out_dim(const Bf16Matrix& W) { return static_cast<size_t>(W.rows); }
inline size_t out_dim(const ExpertMatrix& W) { return static_cast<size_t>(W.is_mxfp4 ? W.mx.rows : W.bf.rows); }

}  // namespace k3
