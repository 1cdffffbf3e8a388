// Where a batch's matrix products run: the seam between the forward pass and
// a compute device (lib/gpu). The chunked prefill installs a backend for the
// products of its chunk (ScopedMatmulBackend); model/linear.h sends the
// whole-matrix products of the calling thread through it. Without one, or
// for a call the backend declines, the CPU kernels of matmul.h run.
//
// A backend must give the CPU kernels' bits (matmul.h's contract: the
// summation order of this machine's target), so whether a product ran on
// the device never changes an output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace k3 {

class ThreadPool;

namespace kernels {

// What a backend has done so far (--stats-json's "gpu"): exact counts.
struct MatmulBackendCounters {
  uint64_t products = 0;      // matrix products run on the device
  uint64_t upload_bytes = 0;  // weights and activations copied to it
  uint64_t peak_bytes = 0;    // the most device memory its buffers held at once
  // gpukda4: the chunk's KDA on the device.
  uint64_t kda_recurrences = 0;  // sequences' KDA recurrences (one layer each) run on the device
};

class MatmulBackend {
 public:
  virtual ~MatmulBackend() = default;
  // The products of matmul.h; each returns false when it leaves the call
  // to the CPU (an empty product, a shape it does not take).
  virtual bool bf16(const uint16_t* W, size_t rows, size_t cols, const float* X, size_t n, float* Y) = 0;
  virtual bool mxfp4(const uint8_t* packed, const uint8_t* scales, size_t rows, size_t cols, const float* X, size_t n,
                     float* Y) = 0;

  // gpukda4: the KDA recurrence of kernels/kda_recurrence.h over n tokens of
  // one sequence, every head; false leaves it to the CPU kernel.
  virtual bool kda_recurrence(float* /*S*/, const float* /*q*/, const float* /*k*/, const float* /*v*/,
                              const float* /*g*/, const float* /*beta*/, size_t /*heads*/, size_t /*dim*/, size_t /*n*/,
                              float* /*o*/) {
    return false;
  }

  // One line for the run's summary: the device, what ran there.
  virtual std::string describe() const = 0;
  virtual MatmulBackendCounters counters() const = 0;
};

// The backend installed on the calling thread, or null (the CPU kernels).
MatmulBackend* current_matmul_backend();

// Installs `backend` on the calling thread for its lifetime (null: none),
// restoring the previous one after.
class ScopedMatmulBackend {
 public:
  explicit ScopedMatmulBackend(MatmulBackend* backend);
  ~ScopedMatmulBackend();
  ScopedMatmulBackend(const ScopedMatmulBackend&) = delete;
  ScopedMatmulBackend& operator=(const ScopedMatmulBackend&) = delete;

 private:
  MatmulBackend* previous_;
};

// matmul_bf16 / matmul_mxfp4 through the calling thread's backend, else on
// the CPU with `pool`.
void matmul_bf16_on_backend(const uint16_t* W, size_t rows, size_t cols, const float* X, size_t n, float* Y,
                            ThreadPool* pool);
void matmul_mxfp4_on_backend(const uint8_t* packed, const uint8_t* scales, size_t rows, size_t cols, const float* X,
                             size_t n, float* Y, ThreadPool* pool);

}  // namespace kernels
}  // namespace k3
