#include "kernels/rms_norm.h"

#include <algorithm>
#include <cmath>

#include "common/thread_pool.h"
#include "kernels/compute_backend.h"

namespace k3::kernels {

float rms_scale(const float* x, size_t dim, float eps) {
  double ss = 0;
  for (size_t c = 0; c < dim; ++c) ss += static_cast<double>(x[c]) * x[c];
  const float mean = static_cast<float>(ss / static_cast<double>(dim));
  return 1.0f / std::sqrt(mean + eps);
}

void rms_norm(const float* x, size_t n, size_t dim, const float* weight, float eps, float* out) {
  for (size_t t = 0; t < n; ++t) {
    const float* xr = x + t * dim;
    float* o = out + t * dim;
    const float r = rms_scale(xr, dim, eps);
    for (size_t c = 0; c < dim; ++c) o[c] = xr[c] * r * weight[c];
  }
}

void rms_norm(const float* x, size_t n, size_t dim, const float* weight, float eps, float* out, ThreadPool* pool) {
  // Rows per chunk: a row is ~2 * dim flops, so chunks of ~64k floats.
  const size_t grain = std::max<size_t>(1, (size_t{1} << 16) / std::max<size_t>(dim, 1));
  auto body = [&](size_t r0, size_t r1) { rms_norm(x + r0 * dim, r1 - r0, dim, weight, eps, out + r0 * dim); };
  parallel_for(pool, n, grain, body);
}

void rms_norm_on_backend(const float* x, size_t n, size_t dim, const float* weight, float eps, float* out,
                         ThreadPool* pool) {
  ComputeBackend* backend = current_compute_backend();
  if (backend && backend->rms_norm(x, n, dim, weight, eps, out)) return;
  rms_norm(x, n, dim, weight, eps, out, pool);
}

}  // namespace k3::kernels
