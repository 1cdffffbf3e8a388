#include "kernels/matmul.h"

#include "kernels/bf16.h"
#include "kernels/mxfp4.h"
#include "kernels/thread_pool.h"

namespace k3::kernels {

namespace {

// Rows per parallel_for chunk below which threading costs more than it saves.
size_t row_grain(size_t cols, size_t n) {
  const size_t work_per_row = cols * (n > 0 ? n : 1);
  const size_t target = 1 << 16;  // ~64k multiply-adds per chunk at least
  return work_per_row >= target ? 1 : target / work_per_row;
}

template <typename RowFn>
void for_rows(size_t rows, size_t cols, size_t n, ThreadPool* pool, const RowFn& fn) {
  if (pool == nullptr) {
    fn(0, rows);
    return;
  }
  pool->parallel_for(rows, row_grain(cols, n), fn);
}

void bf16_rows(const uint16_t* W, size_t r0, size_t r1, size_t rows, size_t cols, const float* X,
               size_t n, float* Y) {
  for (size_t r = r0; r < r1; ++r) {
    const uint16_t* w = W + r * cols;
    for (size_t t = 0; t < n; ++t) {
      const float* x = X + t * cols;
      float acc = 0.0f;
      for (size_t c = 0; c < cols; ++c) acc += bf16_to_f32(w[c]) * x[c];
      Y[t * rows + r] = acc;
    }
  }
}

void mxfp4_rows(const uint8_t* packed, const uint8_t* scales, size_t r0, size_t r1, size_t rows,
                size_t cols, const float* X, size_t n, float* Y) {
  const size_t groups = cols / kMxfp4Group;
  for (size_t r = r0; r < r1; ++r) {
    const uint8_t* p = packed + r * (cols / 2);
    const uint8_t* s = scales + r * groups;
    for (size_t t = 0; t < n; ++t) {
      const float* x = X + t * cols;
      float acc = 0.0f;
      for (size_t c = 0; c < cols; c += 2) {
        const float scale = mxfp4_scale_value(s[c / kMxfp4Group]);
        const uint8_t b = p[c / 2];
        acc += kMxfp4CodeValues[b & 15] * scale * x[c];
        acc += kMxfp4CodeValues[b >> 4] * scale * x[c + 1];
      }
      Y[t * rows + r] = acc;
    }
  }
}

void f32_rows(const float* W, size_t r0, size_t r1, size_t rows, size_t cols, const float* X,
              size_t n, float* Y) {
  for (size_t r = r0; r < r1; ++r) {
    const float* w = W + r * cols;
    for (size_t t = 0; t < n; ++t) {
      const float* x = X + t * cols;
      float acc = 0.0f;
      for (size_t c = 0; c < cols; ++c) acc += w[c] * x[c];
      Y[t * rows + r] = acc;
    }
  }
}

}  // namespace

void matmul_bf16_scalar(const uint16_t* W, size_t rows, size_t cols, const float* X, size_t n,
                        float* Y) {
  bf16_rows(W, 0, rows, rows, cols, X, n, Y);
}

void matmul_mxfp4_scalar(const uint8_t* packed, const uint8_t* scales, size_t rows, size_t cols,
                         const float* X, size_t n, float* Y) {
  mxfp4_rows(packed, scales, 0, rows, rows, cols, X, n, Y);
}

void matmul_bf16(const uint16_t* W, size_t rows, size_t cols, const float* X, size_t n, float* Y,
                 ThreadPool* pool) {
  for_rows(rows, cols, n, pool,
           [&](size_t r0, size_t r1) { bf16_rows(W, r0, r1, rows, cols, X, n, Y); });
}

void matmul_mxfp4(const uint8_t* packed, const uint8_t* scales, size_t rows, size_t cols,
                  const float* X, size_t n, float* Y, ThreadPool* pool) {
  for_rows(rows, cols, n, pool, [&](size_t r0, size_t r1) {
    mxfp4_rows(packed, scales, r0, r1, rows, cols, X, n, Y);
  });
}

void matmul_f32(const float* W, size_t rows, size_t cols, const float* X, size_t n, float* Y,
                ThreadPool* pool) {
  for_rows(rows, cols, n, pool,
           [&](size_t r0, size_t r1) { f32_rows(W, r0, r1, rows, cols, X, n, Y); });
}

const char* kernel_target_name() { return "scalar"; }

}  // namespace k3::kernels
