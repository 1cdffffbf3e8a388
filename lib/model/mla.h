// Gated NoPE multi-head latent attention, computed on the compressed latent.
//
// With no rotary embedding, kv_b_proj can be absorbed: for head h with
// W_uk = kv_b rows [h*(nope+v), +nope) and W_uv = the next v rows,
//   q_h . k_h(j) = (W_uk^T q_nope_h) . c(j) + q_rope_h . k_r(j)
//   o_h          = W_uv (sum_j p_j c(j))
// where c(j) = rms(c, kv_a_layernorm) of position j. So the cache holds only
// kv_lora_rank + qk_rope_head_dim floats per position (MlaCache), not the
// expanded keys and values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "model/config.h"
#include "model/sequence_state.h"
#include "model/weights.h"

namespace k3 {

class ForwardScratch;
class ThreadPool;

// Norm epsilon of q_a_layernorm and kv_a_layernorm (built without an eps
// argument upstream, so the RMSNorm default applies, not rms_norm_eps).
inline constexpr float kMlaLoraNormEps = 1e-6f;

// Appends the n tokens' latents to the cache (positions cache_len .. +n) and
// attends causally. x[n, hidden] = rms(h, input_layernorm) -> out[n, hidden].
// (One sequence with scratch of its own; the engine uses the form below.)
void mla_forward(const ModelConfig& config, const MlaWeights& w, MlaCache& cache, const float* x, size_t n, float* out,
                 ThreadPool* pool);
// The same over the rows of several sequences (segments[i].state->mla): the
// projections read their weights once for all rows; each row attends to its
// own sequence's cache. Bit-identical per row to running it alone.
// Temporaries live in `scratch`.
void mla_forward(const ModelConfig& config, const MlaWeights& w, std::span<const LayerSegment> segments, const float* x,
                 size_t n, float* out, ThreadPool* pool, ForwardScratch& scratch);

// Scratch mla_forward takes for n rows attending to at most `positions`
// positions, split over `slots` threads: floats, and indices (size_t).
size_t mla_scratch_floats(const ModelConfig& config, size_t rows, size_t positions, size_t slots);
inline size_t mla_scratch_indices(size_t rows) { return 2 * rows; }

// Drops cached positions from `positions` on (rollback of rejected rows);
// the cache gets a new generation when any are dropped.
void mla_truncate(const ModelConfig& config, MlaCache& cache, int64_t positions);

// Positions currently cached.
int64_t mla_cache_positions(const ModelConfig& config, const MlaCache& cache);

}  // namespace k3
