// Layer kernels: the numeric ops (Highway with a scalar reference each) the graph is built from.
//
// Matrix products with FP32 accumulation over BF16 and MXFP4 weights.
//
// Y[t, r] = sum_c W[r, c] * X[t, c] for t < n tokens, r < rows.
// W is row-major [rows, cols]; X is [n, cols] FP32 row-major; Y is [n, rows].
//
// Determinism contract (the engine's bit-identity rests on it):
//  * Y[t, r] depends only on row r of W and row t of X: the summation order
//    is fixed by `cols` and the SIMD target alone, never by n, by which other
//    rows or tokens are in the call, or by the thread count/partition.
//  * So a token's result is bit-identical whether it is computed alone
//    (decode) or in a batch (prefill), and for any --threads.
// The batched form reads each weight row once for all n tokens (prefill reads
// every weight matrix once per batch).
#pragma once

#include <cstddef>
#include <cstdint>

namespace k3 {

class ThreadPool;

namespace kernels {

// BF16 weights (raw uint16 bit patterns).
void matmul_bf16(const uint16_t* W, size_t rows, size_t cols, const float* X, size_t n, float* Y, ThreadPool* pool);

// MXFP4 weights (compressed-tensors mxfp4-pack-quantized): packed is
// [rows, cols/2] (low nibble = even column), scales is [rows, cols/32] E8M0.
// cols must be a multiple of 32. Scale bytes must have been validated (< 254).
void matmul_mxfp4(const uint8_t* packed, const uint8_t* scales, size_t rows, size_t cols, const float* X, size_t n,
                  float* Y, ThreadPool* pool);

// Rows [row_begin, row_end) of the products above, on the calling thread:
// Y keeps the whole product's layout ([n, rows]) and only those rows'
// outputs are written, with the whole product's bits (the contract above).
// For callers that split the rows of several products (and the work on
// their outputs) between threads in one parallel region of their own.
void matmul_bf16_rows(const uint16_t* W, size_t rows, size_t cols, const float* X, size_t n, float* Y, size_t row_begin,
                      size_t row_end);
void matmul_mxfp4_rows(const uint8_t* packed, const uint8_t* scales, size_t rows, size_t cols, const float* X, size_t n,
                       float* Y, size_t row_begin, size_t row_end);

// Rows of an n-token product over `cols` columns that carry enough work to
// be worth a thread of their own (the split the products above use).
size_t matmul_row_grain(size_t cols, size_t n);

// FP32 weights (small tensors, tests).
void matmul_f32(const float* W, size_t rows, size_t cols, const float* X, size_t n, float* Y, ThreadPool* pool);

// Scalar references: plain loops, used by tests to check the SIMD paths.
void matmul_bf16_scalar(const uint16_t* W, size_t rows, size_t cols, const float* X, size_t n, float* Y);
void matmul_mxfp4_scalar(const uint8_t* packed, const uint8_t* scales, size_t rows, size_t cols, const float* X,
                         size_t n, float* Y);

// The SIMD target chosen at run time ("AVX3", "AVX2", "SSE4", "EMU128", ...).
const char* kernel_target_name();

// Float lanes of that target's vectors (16 on AVX-512, 8 on AVX2, 4 on
// SSE4, 1 on SCALAR): the lane count of the summation order above, which a
// device computing the same products (lib/gpu) has to follow.
size_t kernel_target_lanes();

}  // namespace kernels
}  // namespace k3
