// Kimi Delta Attention: a gated delta-rule linear attention with a fixed-size
// recurrent state per head (SPEC section 2, "KDA").
//
// The projections run batched over the n tokens; the short causal conv
// (kernels/short_conv.h) and the recurrence (kernels/kda_step.h) then run
// token by token, carrying KdaState, so a prompt in one batch and the same
// tokens one at a time give bit-identical results.
#pragma once

#include <cstddef>

#include "model/config.h"
#include "model/sequence_state.h"
#include "model/weights.h"

namespace k3 {

class ThreadPool;

// Sizes and zeroes the state of one KDA layer (a new sequence).
void kda_reset(const ModelConfig& config, KdaState& state);

// x[n, hidden] = rms(h, input_layernorm) of n consecutive tokens -> out[n, hidden].
void kda_forward(const ModelConfig& config, const KdaWeights& w, KdaState& state, const float* x, size_t n,
                 float* out, ThreadPool* pool);

// The gate g (log decay, <= 0) of one channel from graw = lin(lin(x, f_a), f_b).
//   lower bound lb: g = lb * sigmoid(exp(A_log[h]) * (graw + dt_bias))
//   otherwise:      g = -exp(A_log[h]) * softplus(graw + dt_bias)
float kda_gate(const ModelConfig& config, float graw, float A_log_h, float dt_bias);

}  // namespace k3
