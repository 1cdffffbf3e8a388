// Kimi Delta Attention: a gated delta-rule linear attention with a fixed-size
// recurrent state per head (SPEC section 2, "KDA").
//
// The projections run batched over the n tokens; the short causal conv
// (kernels/short_conv.h) and the recurrence (kernels/kda_step.h) then run
// token by token, carrying KdaState, so a prompt in one batch and the same
// tokens one at a time give bit-identical results.
#pragma once

#include <cstddef>
#include <span>

#include "model/config.h"
#include "model/sequence_state.h"
#include "model/weights.h"

namespace k3 {

class ForwardScratch;
class ThreadPool;

// Sizes and zeroes the state of one KDA layer (a new sequence).
void kda_reset(const ModelConfig& config, KdaState& state);

// x[n, hidden] = rms(h, input_layernorm) of n consecutive tokens -> out[n, hidden].
// (One sequence with scratch of its own; the engine uses the form below.)
void kda_forward(const ModelConfig& config, const KdaWeights& w, KdaState& state, const float* x, size_t n, float* out,
                 ThreadPool* pool);
// The same over the rows of several sequences at once: every projection reads
// its weights once for all rows; each segment's rows run through its own conv
// carries and recurrent state (segments[i].state->kda). Each row's output is
// bit-identical to running its sequence alone. Temporaries live in `scratch`.
void kda_forward(const ModelConfig& config, const KdaWeights& w, std::span<const LayerSegment> segments, const float* x,
                 size_t n, float* out, ThreadPool* pool, ForwardScratch& scratch);

// Scratch floats kda_forward takes for n rows split over `slots` threads.
size_t kda_scratch_floats(const ModelConfig& config, size_t rows, size_t slots);

// Rolls `state` back to just after row `keep` - 1 (1 <= keep <= rows) of the
// pass `history` recorded.
void kda_rollback(const ModelConfig& config, const KdaRowHistory& history, size_t keep, KdaState& state);

// The gate g (log decay, <= 0) of one channel from graw = lin(lin(x, f_a), f_b).
//   lower bound lb: g = lb * sigmoid(exp(A_log[h]) * (graw + dt_bias))
//   otherwise:      g = -exp(A_log[h]) * softplus(graw + dt_bias)
float kda_gate(const ModelConfig& config, float graw, float A_log_h, float dt_bias);

}  // namespace k3
