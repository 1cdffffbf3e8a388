// rms(x, w, eps) = x * rsqrt(mean(x^2) + eps) * w, per row.
#pragma once

#include <cstddef>

namespace k3 {
class ThreadPool;
}

namespace k3::kernels {

// Normalises n rows of `dim` floats from x into out (out may equal x). The
// mean of squares is summed in double in index order, so a row's result never
// depends on the other rows.
void rms_norm(const float* x, size_t n, size_t dim, const float* weight, float eps, float* out);
// The same with the rows split over `pool` (inline when null): bit-identical,
// since each row is normalised by the code above on its own.
void rms_norm(const float* x, size_t n, size_t dim, const float* weight, float eps, float* out, ThreadPool* pool);

// rms_norm through the calling thread's backend (kernels/compute_backend.h),
// else on the CPU with `pool`: the chunk's norms, on the device with it.
void rms_norm_on_backend(const float* x, size_t n, size_t dim, const float* weight, float eps, float* out,
                         ThreadPool* pool);

// The scale factor rsqrt(mean(x^2) + eps) of one row.
float rms_scale(const float* x, size_t dim, float eps);

}  // namespace k3::kernels
