// One step of the KDA (Kimi Delta Attention) recurrence: one head, one token.
//   S = S * exp(g)[:, None];  S += outer(beta * k, v - S^T k);  o = S^T q
// S is D x D (key x value), q is already l2-normalised and scaled, k is
// l2-normalised, g is the per-key-channel log decay (model/kda.cpp computes
// them). Every sum runs over i = 0..D-1 in turn, as SPEC section 2 writes
// it, one rounding per multiply and per add; the SIMD code (Highway, over the
// value index) keeps exactly these operations, so the bits do not depend on
// the machine, the vector width or the thread count.
#pragma once

#include <cstddef>

namespace k3::kernels {

// `u` is scratch of D floats (the caller's, so the step allocates nothing).
void kda_recurrent_step(float* S, const float* q, const float* k, const float* v, const float* g, float beta, size_t D,
                        float* o, float* u);

}  // namespace k3::kernels
