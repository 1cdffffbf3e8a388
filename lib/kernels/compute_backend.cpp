// The calling thread's matrix-product backend. Per thread, because the
// installer is the pass that owns the batch (the chunked prefill) and a
// server may run other passes on other threads meanwhile.
#include "kernels/compute_backend.h"

#include "kernels/matmul.h"

namespace k3::kernels {
namespace {
thread_local ComputeBackend* t_backend = nullptr;
}  // namespace

ComputeBackend* current_compute_backend() { return t_backend; }

ScopedComputeBackend::ScopedComputeBackend(ComputeBackend* backend) : previous_(t_backend) { t_backend = backend; }
ScopedComputeBackend::~ScopedComputeBackend() { t_backend = previous_; }

void matmul_bf16_on_backend(const uint16_t* W, size_t rows, size_t cols, const float* X, size_t n, float* Y,
                            ThreadPool* pool) {
  if (t_backend && t_backend->bf16(W, rows, cols, X, n, Y)) return;
  matmul_bf16(W, rows, cols, X, n, Y, pool);
}

void matmul_mxfp4_on_backend(const uint8_t* packed, const uint8_t* scales, size_t rows, size_t cols, const float* X,
                             size_t n, float* Y, ThreadPool* pool) {
  if (t_backend && t_backend->mxfp4(packed, scales, rows, cols, X, n, Y)) return;
  matmul_mxfp4(packed, scales, rows, cols, X, n, Y, pool);
}

}  // namespace k3::kernels
