// The SiTU step: SiTU MLP's elementwise part (model/situ_mlp.h is the layer
// around it: gate and up products in, the down product out).
//   a = beta * tanh(g / beta) * sigmoid(g)
//   u' = lbeta * tanh(u / lbeta)          (u' = u when the config has no lbeta)
//   situ(g, u) = a * u'
// It is not SwiGLU. situ() is the scalar form (libm's tanh and exp), the
// reference; the model runs situ_span()/situ_inplace(), the same formula in
// Highway vectors (its Tanh and Exp, within a few ulp of libm's), which give
// each element the same bits wherever it sits in a span, so outputs stay
// bit-identical across thread counts, budgets and batches.
#pragma once

#include <cstddef>

namespace k3 {
class ThreadPool;
}

namespace k3::kernels {

struct SituParams {
  float beta = 4.0f;
  bool has_linear_beta = true;
  float linear_beta = 25.0f;
};

float situ(float g, float u, const SituParams& p);

// g[i] = situ(g[i], u[i]) for i < count, vectorised (the ragged end goes
// through the same vector code, padded).
void situ_span(float* g, const float* u, size_t count, const SituParams& p);

// situ_inplace through the calling thread's backend (kernels/compute_backend.h),
// else on the CPU with `pool`: the chunk's step, on the device with it.
void situ_inplace_on_backend(float* g, const float* u, size_t count, const SituParams& p, ThreadPool* pool);

// situ_span over count elements, split over `pool` (inline when null). Each
// element is computed once by the same code whatever the split, so the
// result does not depend on the thread count.
void situ_inplace(float* g, const float* u, size_t count, const SituParams& p, ThreadPool* pool);

}  // namespace k3::kernels
