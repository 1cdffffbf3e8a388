// Where a chunk's batched operations run (matrix products, norms, SiTU,
// attention, the KDA recurrence and short conv): the seam between the forward pass and
// a compute device (lib/gpu). The chunked prefill installs a backend for the
// products of its chunk (ScopedComputeBackend); model/linear.h sends the
// whole-matrix products of the calling thread through it. Without one, or
// for a call the backend declines, the CPU kernels of matmul.h run.
//
// A backend must give the CPU kernels' bits (matmul.h's contract: the
// summation order of this machine's target), so whether a product ran on
// the device never changes an output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace k3 {

class ThreadPool;

namespace kernels {

struct SituParams;

// The KDA decay gate's lower bound (model/config.h): g = value *
// sigmoid(...) where `has`, else the softplus form.
struct KdaGateBound {
  bool has = false;
  float value = 0;
};

// What a backend has done so far (--stats-json's "gpu"): exact counts.
struct ComputeBackendCounters {
  uint64_t products = 0;      // matrix products run on the device
  uint64_t upload_bytes = 0;  // weights and activations copied to it
  uint64_t peak_bytes = 0;    // the most device memory its buffers held at once
  // The double-buffered staging of weights (gpu/gpu_backend.h).
  uint64_t dispatches = 0;               // row slices run, one per staged upload of weights
  uint64_t overlapped_upload_bytes = 0;  // copied while the other slot's slice ran on the device
  uint64_t busy_waits = 0;               // refills that waited for a slot's slice to finish (timing, not exact)
  // The chunk's other ops run on the device.
  uint64_t rms_norms = 0;   // kernels::rms_norm calls (each over all of its rows)
  uint64_t situ_steps = 0;  // kernels::situ_inplace calls
  uint64_t attention = 0;   // MLA attention calls (a layer's rows) run on the device
  // The chunk's KDA on the device.
  uint64_t kda_recurrences = 0;  // sequences' KDA recurrences (one layer each) run on the device
  // MLA's latent caches kept on the device between attention calls.
  uint64_t latent_upload_bytes = 0;  // latent rows copied to the device (part of upload_bytes)
  uint64_t latent_kept_bytes = 0;    // latent rows a call found on the device already, not copied again
  // Where the staged weights are read from: copied on the device into
  // device-local memory (a discrete GPU without host-visible device-local
  // memory), or read where the host wrote them.
  bool device_local_staging = false;
  uint64_t device_local_copies = 0;  // staged slices copied into device-local memory
  // The KDA layer's short conv.
  uint64_t kda_convs = 0;  // short convs (one of q, k, v of a sequence's rows) run on the device
  // AttnRes mixing on the device.
  uint64_t attn_res_mixes = 0;  // kernels::attn_res_mix calls (each over all of its rows)
  // The chunk's AttnRes block states kept on the device.
  uint64_t block_upload_bytes = 0;  // block state rows copied to the device (part of upload_bytes)
  uint64_t block_kept_bytes = 0;    // block state rows a mix found there, not copied again
  // The KDA layer's norms and gates (model/kda.cpp's head loop).
  uint64_t kda_norms = 0;    // L2 normalisations (q or k of a sequence's rows of one layer) run on the device
  uint64_t kda_gates = 0;    // gate-and-beta calls (a sequence's rows of one layer) run on the device
  uint64_t kda_outputs = 0;  // output norm-and-gate calls (a sequence's rows of one layer) run on the device
  // A layer's weights kept on the device across the chunk's sub-batches.
  uint64_t weight_upload_bytes = 0;  // weights and scales copied to the device (part of upload_bytes)
  uint64_t weight_kept_bytes = 0;    // of these, copied into a layer's kept copies (once per layer and chunk)
  uint64_t weight_reused_bytes = 0;  // weights and scales a product found kept, not copied again
  // The KDA states kept on the device across a layer's sub-batches.
  uint64_t kda_state_upload_bytes = 0;    // KDA states copied to the device (part of upload_bytes)
  uint64_t kda_state_download_bytes = 0;  // KDA states copied back to the host
  // Device-local twins of the kept block states and latent caches (where
  // the device stages into device-local memory; 0 elsewhere).
  uint64_t block_twin_bytes = 0;   // block state rows copied into their twin (once each)
  uint64_t latent_twin_bytes = 0;  // latent rows copied into their twin (once each)
  uint64_t row_twin_bytes = 0;     // norms' and SiTU steps' rows copied into device-local twins and back, per call
};

// MLA's attention over the latent cache for `rows` rows and every head
// (model/mla.cpp): per row t and head h, with W_uk and W_uv head h's halves
// of kv_b_proj, absorb_key_projection(W_uk, q_nope), latent_attention over
// positions 0 .. row_pos[t] of the row's cache, expand_value_projection
// (W_uv, ctx) into out (kernels/attention_scores.h, before the output gate).
struct LatentAttentionCall {
  size_t rows, heads, nope, rope, vdim, kvl;
  float scale;
  const float* q;                 // [rows, heads, nope + rope]
  const uint16_t* kv_b;           // BF16 [heads, nope + vdim, kvl]
  const float* const* caches;     // each sequence's latents [positions, kvl + rope]
  const size_t* cache_positions;  // positions held by each cache
  size_t cache_count;
  const size_t* row_cache;  // the cache row t attends to
  const size_t* row_pos;    // row t's position in it (it sees 0 .. row_pos[t])
  float* out;               // [rows, heads, vdim]
  // Each cache's MlaCache::generation: a device may keep a copy of a cache
  // between calls and copy only the rows appended since, while the
  // generation is the same. Null: nothing is kept.
  const uint64_t* cache_generations = nullptr;
};

class ComputeBackend {
 public:
  virtual ~ComputeBackend() = default;
  // The products of matmul.h; each returns false when it leaves the call
  // to the CPU (an empty product, a shape it does not take).
  virtual bool bf16(const uint16_t* W, size_t rows, size_t cols, const float* X, size_t n, float* Y) = 0;
  virtual bool mxfp4(const uint8_t* packed, const uint8_t* scales, size_t rows, size_t cols, const float* X, size_t n,
                     float* Y) = 0;

  // The chunk's row and elementwise ops, each with its CPU kernel's
  // bits; false leaves the call to the CPU kernel.
  // kernels::rms_norm over n rows of dim floats (out may equal x).
  virtual bool rms_norm(const float* /*x*/, size_t /*n*/, size_t /*dim*/, const float* /*weight*/, float /*eps*/,
                        float* /*out*/) {
    return false;
  }
  // kernels::situ_span over count elements: g[i] = situ(g[i], u[i]).
  virtual bool situ(float* /*g*/, const float* /*u*/, size_t /*count*/, const SituParams& /*p*/) { return false; }
  // MLA's attention (LatentAttentionCall); false leaves it to the CPU
  // kernels.
  virtual bool latent_attention(const LatentAttentionCall& call) {
    (void)call;
    return false;
  }
  // The KDA recurrence of kernels/kda_recurrence.h over n tokens of
  // one sequence, every head; false leaves it to the CPU kernel.
  virtual bool kda_recurrence(float* /*S*/, const float* /*q*/, const float* /*k*/, const float* /*v*/,
                              const float* /*g*/, const float* /*beta*/, size_t /*heads*/, size_t /*dim*/, size_t /*n*/,
                              float* /*o*/) {
    return false;
  }

  // MLA's latent caches kept on the device: at most `caches` caches of at
  // most `positions` positions each (the run's sequences x MLA layers, its
  // context; the memory plan counts them). false: the backend keeps none.
  virtual bool keep_latent_caches(size_t /*caches*/, size_t /*positions*/) { return false; }

  // The KDA layer's short conv:
  // kernels::short_conv_silu over n rows of one sequence (kernels/short_conv.h):
  // raw convolved in place, carry advanced; false leaves it to the CPU kernel.
  virtual bool short_conv_silu(const uint16_t* /*w*/, float* /*carry*/, float* /*raw*/, size_t /*n*/,
                               size_t /*channels*/, size_t /*K*/) {
    return false;
  }

  // AttnRes mixing: kernels::attn_res_mix over n rows, the values being the
  // block_count block states then the partial sum p; false leaves it to the
  // CPU kernel.
  virtual bool attn_res_mix(const float* const* /*blocks*/, size_t /*block_count*/, const float* /*p*/, size_t /*n*/,
                            size_t /*hidden*/, const uint16_t* /*proj*/, const float* /*norm*/, float /*eps*/,
                            float* /*out*/) {
    return false;
  }

  // The chunk's AttnRes block states kept on the device (model/prefill_chunk.h
  // ChunkBlocks): each block's rows copied once, when it opens, and every
  // later mix of the chunk reading them there. The defaults keep none (the
  // mixes pass every block's rows).
  // The most device memory the kept blocks may take (the device plan's
  // share, runtime/device_plan.h); until told, as much as fits.
  virtual void limit_chunk_blocks(uint64_t /*bytes*/) {}
  // A chunk of `rows` rows begins, whose block states (at most `blocks`)
  // are `hidden` wide: what an earlier chunk kept is forgotten. Returns how
  // many of its first blocks the device can keep (0: none).
  virtual size_t begin_chunk_blocks(size_t /*rows*/, size_t /*hidden*/, size_t /*blocks*/) { return 0; }
  // Copies block `index` (opened in order, below begin_chunk_blocks's
  // answer), its `rows` [rows, hidden]; false: not kept.
  virtual bool keep_chunk_block(size_t /*index*/, const float* /*rows*/) { return false; }
  // attn_res_mix over the chunk's rows [row0, row0 + n), the values being
  // the first `kept` kept block states (read on the device), then blocks[j]
  // for kept <= j < block_count ([n, hidden] rows on the host; blocks may be
  // null when kept == block_count), then p; false leaves the call to the
  // caller (nothing written).
  virtual bool attn_res_mix_kept(size_t /*kept*/, const float* const* /*blocks*/, size_t /*block_count*/,
                                 size_t /*row0*/, const float* /*p*/, size_t /*n*/, size_t /*hidden*/,
                                 const uint16_t* /*proj*/, const float* /*norm*/, float /*eps*/, float* /*out*/) {
    return false;
  }

  // The KDA layer's norms and gates, around its recurrence (model/kda.cpp),
  // each over `rows` rows of `dim` floats (a row: one token's head), with
  // the CPU's bits; false leaves the call to the CPU code.
  // kernels::l2_normalize of each row with `scale`, in place (q and k
  // before the recurrence).
  virtual bool kda_l2_normalize(float* /*x*/, size_t /*rows*/, size_t /*dim*/, float /*scale*/) { return false; }
  // model/kda.cpp's kda_gate over `tokens` tokens' g [tokens, heads, dim]
  // and beta = sigmoid(beta) over their beta [tokens, heads], in place;
  // A_log [heads], dt_bias [heads, dim].
  virtual bool kda_gates(float* /*g*/, float* /*beta*/, size_t /*tokens*/, size_t /*heads*/, size_t /*dim*/,
                         const float* /*A_log*/, const float* /*dt_bias*/, const KdaGateBound& /*bound*/) {
    return false;
  }
  // The output before o_proj, in place: o = rms_norm(o, o_norm, eps) *
  // sigmoid(gate) elementwise (kernels/rms_norm.h, kernels/activations.h).
  virtual bool kda_output(float* /*o*/, const float* /*gate*/, size_t /*rows*/, size_t /*dim*/, const float* /*o_norm*/,
                          float /*eps*/) {
    return false;
  }

  // A layer's weights kept on the device across the chunk's sub-batches:
  // between begin_layer_weights and end_layer_weights, a product whose
  // weights (pointer, shape, kind and scales) an earlier product of the same
  // span uploaded runs on that copy instead of uploading them again. The
  // span is one layer's trunk products while its weights are acquired:
  // the kept copies never outlive it (a streamed trunk reuses its buffers
  // for another layer, so a pointer alone names no weights). The defaults
  // keep nothing (every product uploads its weights).
  // The most device memory the kept copies may take (the device plan's
  // share, runtime/device_plan.h); until told, as much as fits.
  virtual void limit_layer_weights(uint64_t /*bytes*/) {}
  // Starts a span: whatever was kept before is dropped.
  virtual void begin_layer_weights() {}
  // Ends it: the kept copies are dropped (never throws).
  virtual void end_layer_weights() noexcept {}

  // The KDA layers' states kept on the device across a layer's sub-batches:
  // between begin_kda_states and end_kda_states, kda_recurrence's state S
  // goes to the device at the first call on it and stays there; later calls
  // on the same S continue from the device's copy, and the host's copy is
  // not written until sync_kda_state(S) or end_kda_states copies it back.
  // The model code says when it reads a state inside the span (a state
  // captured mid-layer) by syncing it, and writes none there; each kept S
  // must outlive the span (its end writes to it). The span is one layer's
  // sub-batches: the copies never outlive it. The defaults keep
  // nothing (every call copies S in and out).
  // Starts a span: whatever was kept before is dropped.
  virtual void begin_kda_states() {}
  // Copies the device's copy of S (if kept) into S; it stays kept.
  virtual void sync_kda_state(float* /*S*/) {}
  // Ends the span: each kept state is copied back into its S (never throws;
  // a state whose last call failed on the device is left as last copied).
  virtual void end_kda_states() noexcept {}

  // One line for the run's summary: the device, what ran there.
  virtual std::string describe() const = 0;
  virtual ComputeBackendCounters counters() const = 0;
};

// The backend installed on the calling thread, or null (the CPU kernels).
ComputeBackend* current_compute_backend();

// Installs `backend` on the calling thread for its lifetime (null: none),
// restoring the previous one after.
class ScopedComputeBackend {
 public:
  explicit ScopedComputeBackend(ComputeBackend* backend);
  ~ScopedComputeBackend();
  ScopedComputeBackend(const ScopedComputeBackend&) = delete;
  ScopedComputeBackend& operator=(const ScopedComputeBackend&) = delete;

 private:
  ComputeBackend* previous_;
};

// One layer's span of kept weights (ComputeBackend::begin_layer_weights) on
// the calling thread's backend, for the guard's lifetime.
// end() closes it early (what is run until begin() keeps nothing); begin()
// opens a new one.
class ScopedLayerWeights {
 public:
  ScopedLayerWeights() : backend_(current_compute_backend()) { begin(); }
  ~ScopedLayerWeights() { end(); }
  void begin() {
    if (backend_) backend_->begin_layer_weights();
  }
  void end() noexcept {
    if (backend_) backend_->end_layer_weights();
  }
  ScopedLayerWeights(const ScopedLayerWeights&) = delete;
  ScopedLayerWeights& operator=(const ScopedLayerWeights&) = delete;

 private:
  ComputeBackend* backend_;
};

// One layer's span of kept KDA states (ComputeBackend::begin_kda_states) on
// the calling thread's backend, for the guard's lifetime (an exception
// leaves each state as its last finished call left it). sync(S) before the
// host reads a state inside the span; end() closes it early.
class ScopedKdaStates {
 public:
  ScopedKdaStates() : backend_(current_compute_backend()) {
    if (backend_) backend_->begin_kda_states();
  }
  ~ScopedKdaStates() { end(); }
  void sync(float* S) {
    if (backend_) backend_->sync_kda_state(S);
  }
  void end() noexcept {
    if (backend_) backend_->end_kda_states();
    backend_ = nullptr;
  }
  ScopedKdaStates(const ScopedKdaStates&) = delete;
  ScopedKdaStates& operator=(const ScopedKdaStates&) = delete;

 private:
  ComputeBackend* backend_;
};

// matmul_bf16 / matmul_mxfp4 through the calling thread's backend, else on
// the CPU with `pool`.
void matmul_bf16_on_backend(const uint16_t* W, size_t rows, size_t cols, const float* X, size_t n, float* Y,
                            ThreadPool* pool);
void matmul_mxfp4_on_backend(const uint8_t* packed, const uint8_t* scales, size_t rows, size_t cols, const float* X,
                             size_t n, float* Y, ThreadPool* pool);

}  // namespace kernels
}  // namespace k3
