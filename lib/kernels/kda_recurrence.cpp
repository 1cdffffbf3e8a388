#include "kernels/kda_recurrence.h"

#include <vector>

#include "common/thread_pool.h"
#include "kernels/compute_backend.h"
#include "kernels/kda_step.h"

namespace k3::kernels {

void kda_recurrence_on_backend(float* S, const float* q, const float* k, const float* v, const float* g,
                               const float* beta, size_t heads, size_t dim, size_t n, float* o, ThreadPool* pool) {
  ComputeBackend* backend = current_compute_backend();
  if (backend && backend->kda_recurrence(S, q, k, v, g, beta, heads, dim, n, o)) return;
  const size_t HD = heads * dim;
  const size_t slots = slots_for(pool, heads);
  std::vector<float> u(slots * dim);  // the step's scratch, one per slot (only where no backend took the call)
  parallel_for_slots(pool, heads, slots, [&](size_t slot, size_t h0, size_t h1) {
    for (size_t h = h0; h < h1; ++h)
      for (size_t t = 0; t < n; ++t) {
        const size_t at = t * HD + h * dim;
        kda_recurrent_step(S + h * dim * dim, q + at, k + at, v + at, g + at, beta[t * heads + h], dim, o + at,
                           u.data() + slot * dim);
      }
  });
}

}  // namespace k3::kernels
