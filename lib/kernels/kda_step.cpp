// The KDA step vectorised with Highway over the value index j (compiled once
// per CPU target, chosen at run time). Every element still takes the scalar
// code's operations in its order, each rounded on its own: sums over i run
// i = 0..D-1 in turn, and the file is compiled without floating-point
// contraction (lib/CMakeLists.txt), so no multiply and add fuse into one
// rounding. The bits are the plain loops' on every target.
#include <cmath>
#include <cstring>

#include "kernels/exp_f32.h"
#include "kernels/kda_step.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/kda_step.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace k3::kernels {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// dst[j] = op(dst[j], src[j], s) for j < D: full vectors, then the ragged
// end one lane at a time through a one-lane vector of the same operation
// (IEEE operations round each lane alike, so lane width cannot change bits).
template <class Op>
HWY_INLINE void Rows(float* dst, const float* src, float s, size_t D, const Op& op) {
  const DF d;
  const size_t N = hn::Lanes(d);
  size_t j = 0;
  for (; j + N <= D; j += N)
    hn::StoreU(op(d, hn::LoadU(d, dst + j), src ? hn::LoadU(d, src + j) : hn::Zero(d), hn::Set(d, s)), d, dst + j);
  const hn::CappedTag<float, 1> d1;
  for (; j < D; ++j)
    hn::StoreU(op(d1, hn::LoadU(d1, dst + j), src ? hn::LoadU(d1, src + j) : hn::Zero(d1), hn::Set(d1, s)), d1,
               dst + j);
}

}  // namespace

void KdaRecurrentStep(float* S, const float* q, const float* k, const float* v, const float* g, float beta, size_t D,
                      float* o, float* u) {
  // Decay each key row, then the delta rule: u = v - S^T k.
  for (size_t i = 0; i < D; ++i)
    Rows(S + i * D, nullptr, exp_f32(g[i]), D, [](auto, auto row, auto, auto s) HWY_ATTR { return hn::Mul(row, s); });
  std::memcpy(u, v, D * sizeof(float));
  for (size_t i = 0; i < D; ++i)
    Rows(u, S + i * D, k[i], D,
         [](auto, auto acc, auto row, auto s) HWY_ATTR { return hn::Sub(acc, hn::Mul(row, s)); });
  for (size_t i = 0; i < D; ++i)
    Rows(S + i * D, u, beta * k[i], D,
         [](auto, auto row, auto ui, auto s) HWY_ATTR { return hn::Add(row, hn::Mul(s, ui)); });
  std::memset(o, 0, D * sizeof(float));
  for (size_t i = 0; i < D; ++i)
    Rows(o, S + i * D, q[i], D,
         [](auto, auto acc, auto row, auto s) HWY_ATTR { return hn::Add(acc, hn::Mul(row, s)); });
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace k3::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace k3::kernels {

HWY_EXPORT(KdaRecurrentStep);

void kda_recurrent_step(float* S, const float* q, const float* k, const float* v, const float* g, float beta, size_t D,
                        float* o, float* u) {
  HWY_DYNAMIC_DISPATCH(KdaRecurrentStep)(S, q, k, v, g, beta, D, o, u);
}

}  // namespace k3::kernels
#endif  // HWY_ONCE
