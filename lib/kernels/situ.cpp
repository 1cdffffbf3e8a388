// SiTU's step over spans, vectorised with Highway (compiled once per CPU
// target and chosen at run time, as kernels/matmul.cpp is); the scalar
// situ() is the reference the tests hold it to.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/thread_pool.h"
#include "kernels/activations.h"
#include "kernels/compute_backend.h"
#include "kernels/situ.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/situ.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// after highway.h
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace k3::kernels {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// One vector of situ(g, u), lane by lane: the scalar formula with Highway's
// Tanh and Exp in place of libm's (within a few ulp of them). A lane's result
// depends only on that lane's g and u.
HWY_INLINE VF SituVec(DF d, VF g, VF u, const SituParams& p) {
  const VF beta = hn::Set(d, p.beta);
  // sigmoid(g) = 1 / (1 + exp(-g)). Highway's Exp is valid up to 104; below
  // g = -88.7 exp(-g) is inf for libm too and the scalar sigmoid 0, so lanes
  // under -104 get 0 and the others a clamped, finite Exp.
  const VF kMinG = hn::Set(d, -104.0f);
  const VF e = hn::Exp(d, hn::Neg(hn::Max(g, kMinG)));
  const VF sig = hn::IfThenElseZero(hn::Ge(g, kMinG), hn::Div(hn::Set(d, 1.0f), hn::Add(hn::Set(d, 1.0f), e)));
  const VF a = hn::Mul(hn::Mul(beta, hn::Tanh(d, hn::Div(g, beta))), sig);
  VF up = u;
  if (p.has_linear_beta) {
    const VF lbeta = hn::Set(d, p.linear_beta);
    up = hn::Mul(lbeta, hn::Tanh(d, hn::Div(u, lbeta)));
  }
  // A NaN in g or u still comes out NaN (through Tanh), as from the scalar
  // step: the test Situ.SpanKeepsNonFiniteInputs holds every target to it.
  return hn::Mul(a, up);
}

}  // namespace

void SituSpan(float* g, const float* u, size_t count, const SituParams& p) {
  const DF d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  for (; i + N <= count; i += N) hn::StoreU(SituVec(d, hn::LoadU(d, g + i), hn::LoadU(d, u + i), p), d, g + i);
  if (i == count) return;
  // The ragged end goes through the same vector code on a padded copy, so
  // an element's value never depends on where its span starts or ends.
  HWY_ALIGN float gb[HWY_MAX_BYTES / sizeof(float)] = {};
  HWY_ALIGN float ub[HWY_MAX_BYTES / sizeof(float)] = {};
  std::memcpy(gb, g + i, (count - i) * sizeof(float));
  std::memcpy(ub, u + i, (count - i) * sizeof(float));
  hn::Store(SituVec(d, hn::Load(d, gb), hn::Load(d, ub), p), d, gb);
  std::memcpy(g + i, gb, (count - i) * sizeof(float));
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace k3::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace k3::kernels {

namespace {

// Elements per parallel_for chunk: a chunk of this many is tens of
// microseconds even vectorised, worth waking a thread for.
constexpr size_t kSituGrain = 16384;

}  // namespace

HWY_EXPORT(SituSpan);

float situ(float g, float u, const SituParams& p) {
  const float a = p.beta * std::tanh(g / p.beta) * sigmoid(g);
  const float up = p.has_linear_beta ? p.linear_beta * std::tanh(u / p.linear_beta) : u;
  return a * up;
}

void situ_span(float* g, const float* u, size_t count, const SituParams& p) {
  HWY_DYNAMIC_DISPATCH(SituSpan)(g, u, count, p);
}

void situ_inplace(float* g, const float* u, size_t count, const SituParams& p, ThreadPool* pool) {
  auto body = [&](size_t begin, size_t end) { situ_span(g + begin, u + begin, end - begin, p); };
  parallel_for(pool, count, kSituGrain, body);
}

void situ_inplace_on_backend(float* g, const float* u, size_t count, const SituParams& p, ThreadPool* pool) {
  ComputeBackend* backend = current_compute_backend();
  if (backend && backend->situ(g, u, count, p)) return;
  situ_inplace(g, u, count, p, pool);
}

}  // namespace k3::kernels
#endif  // HWY_ONCE
