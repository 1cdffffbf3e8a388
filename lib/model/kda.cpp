#include "model/kda.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/error.h"
#include "common/thread_pool.h"
#include "kernels/activations.h"
#include "kernels/compute_backend.h"
#include "kernels/exp_f32.h"
#include "kernels/kda_recurrence.h"
#include "kernels/kda_step.h"
#include "kernels/l2_normalize.h"
#include "kernels/rms_norm.h"
#include "kernels/short_conv.h"
#include "model/forward_scratch.h"
#include "model/linear.h"

namespace k3 {

namespace {

// KDA's short conv over n rows of one sequence, in place (kernels/short_conv.h;
// on the chunk's device when one is installed);
// `record`, when given, keeps [carry rows, raw rows] so the carry after any
// row can be cut from it for a rollback.
void short_conv_silu(const Bf16Matrix& w, std::vector<float>& carry, float* raw, size_t n, size_t channels, size_t K,
                     std::vector<float>* record, float* next_carry, ThreadPool* pool) {
  if (record) {
    record->resize((K - 1 + n) * channels);
    std::copy(carry.begin(), carry.end(), record->begin());
    std::copy(raw, raw + n * channels, record->begin() + static_cast<ptrdiff_t>(carry.size()));
  }
  kernels::short_conv_silu_on_backend(w.data, carry.data(), raw, n, channels, K, next_carry, pool);
}

// The pieces of KDA's scratch, in carving order. Each buffer is reused once
// what it held is dead, so a row costs four H*D rows and two small ones:
//   q: q (conv, then normalised);
//   k: k (conv, then normalised), then the output gate's raw values
//      (g_proj, computed once the recurrence no longer needs k);
//   v: v (conv), then the recurrence's output o (a step reads its token's v
//      before it writes that token's o: kernels/kda_step.h), then the
//      normalised and gated output;
//   g: graw = lin(lin(x, f_a), f_b), then the log decay g;
//   fa: lin(x, f_a); beta: b_proj's raw values, then their sigmoid.
// Fixed, whatever the rows: the conv's next carry and the per-slot u of the
// CPU recurrence.
struct KdaScratch {
  float *q, *k, *v, *g, *fa, *beta, *next_carry, *u;
  static size_t floats(const ModelConfig& c, size_t n, size_t slots) {
    using C = ScratchCarver<float>;
    const size_t H = c.kda_num_heads, D = c.kda_head_dim, K = c.kda_conv_kernel, HD = H * D;
    return 4 * C::padded(n * HD) + C::padded(n * D) + C::padded(n * H) + C::padded((K - 1) * HD) + C::padded(slots * D);
  }
  KdaScratch(const ModelConfig& c, size_t n, size_t slots, ForwardScratch& scratch) {
    const size_t H = c.kda_num_heads, D = c.kda_head_dim, K = c.kda_conv_kernel, HD = H * D;
    ScratchCarver<float> carve(scratch.op_floats(floats(c, n, slots)));
    q = carve.take(n * HD);
    k = carve.take(n * HD);
    v = carve.take(n * HD);
    g = carve.take(n * HD);
    fa = carve.take(n * D);
    beta = carve.take(n * H);
    next_carry = carve.take((K - 1) * HD);
    u = carve.take(slots * D);
  }
};

// A head's output row after the recurrence: per-head rms with o_norm, then
// the full-rank sigmoid gate.
void finish_output(const ModelConfig& c, const KdaWeights& w, float* oh, const float* gate) {
  const size_t D = c.kda_head_dim;
  kernels::rms_norm(oh, 1, D, w.o_norm.data, c.rms_norm_eps, oh);
  for (size_t d = 0; d < D; ++d) oh[d] *= kernels::sigmoid(gate[d]);
}

// Every segment's output rows (o over v, the gate's raw values over k), each
// segment in one call on the chunk's device where one is installed and
// takes it, else all on the CPU: each row takes the same operations
// whichever runs it.
void finish_outputs(const ModelConfig& c, const KdaWeights& w, std::span<const LayerSegment> segments,
                    const KdaScratch& m, size_t slots, ThreadPool* pool) {
  const size_t H = c.kda_num_heads, D = c.kda_head_dim, HD = H * D;
  std::vector<const LayerSegment*> on_cpu;
  kernels::ComputeBackend* backend = kernels::current_compute_backend();
  for (const LayerSegment& seg : segments) {
    const size_t off = seg.begin * HD;
    if (!backend || !backend->kda_output(m.v + off, m.k + off, seg.count * H, D, w.o_norm.data, c.rms_norm_eps))
      on_cpu.push_back(&seg);
  }
  parallel_for_slots(pool, on_cpu.size() * H, slots, [&](size_t, size_t i0, size_t i1) {
    for (size_t item = i0; item < i1; ++item) {
      const LayerSegment& seg = *on_cpu[item / H];
      const size_t h = item % H;
      for (size_t t = seg.begin; t < seg.begin + seg.count; ++t)
        finish_output(c, w, m.v + t * HD + h * D, m.k + t * HD + h * D);
    }
  });
}

// What the chunk's device did of one segment's preparation: q's norm,
// k's, the gates and beta.
struct PreparedOnDevice {
  bool q = false, k = false, gates = false;
};

// Before the recurrence, per head and token: q and k normalised
// (flash-linear-attention's l2norm, q also scaled by 1/sqrt(D)), the gates
// and beta written over their raw values. Each segment's norms and gates
// go to the chunk's device, one call each, where one is installed and takes
// them; the rest run here: each value takes the same operations either way.
void prepare_heads(const ModelConfig& c, const KdaWeights& w, std::span<const LayerSegment> segments,
                   const KdaScratch& m, size_t slots, ThreadPool* pool) {
  const size_t H = c.kda_num_heads, D = c.kda_head_dim, HD = H * D;
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(D));
  std::vector<PreparedOnDevice> done(segments.size());
  if (kernels::ComputeBackend* backend = kernels::current_compute_backend()) {
    const kernels::KdaGateBound bound{c.kda_has_gate_lower_bound, c.kda_gate_lower_bound};
    for (size_t i = 0; i < segments.size(); ++i) {
      const size_t off = segments[i].begin * HD, tokens = segments[i].count;
      done[i].q = backend->kda_l2_normalize(m.q + off, tokens * H, D, q_scale);
      done[i].k = backend->kda_l2_normalize(m.k + off, tokens * H, D, 1.0f);
      done[i].gates = backend->kda_gates(m.g + off, m.beta + segments[i].begin * H, tokens, H, D, w.A_log.data,
                                         w.dt_bias.data, bound);
    }
  }
  parallel_for_slots(pool, segments.size() * H, slots, [&](size_t, size_t i0, size_t i1) {
    for (size_t item = i0; item < i1; ++item) {
      const LayerSegment& seg = segments[item / H];
      const PreparedOnDevice& on_device = done[item / H];
      const size_t h = item % H;
      const float A_log_h = w.A_log.data[h];  // indexed by head, never by channel
      for (size_t t = seg.begin; t < seg.begin + seg.count; ++t) {
        if (!on_device.q) kernels::l2_normalize(m.q + t * HD + h * D, D, q_scale);
        if (!on_device.k) kernels::l2_normalize(m.k + t * HD + h * D, D, 1.0f);
        if (on_device.gates) continue;
        float* gh = m.g + t * HD + h * D;
        for (size_t d = 0; d < D; ++d) gh[d] = kda_gate(c, gh[d], A_log_h, w.dt_bias.data[h * D + d]);
        m.beta[t * H + h] = kernels::sigmoid(m.beta[t * H + h]);
      }
    }
  });
}

// The recurrence of every segment on the CPU, all heads of all segments at
// once, o over v; a segment that keeps rollback rows gets a copy of S after
// each of its rows but the last.
void recurrence_on_cpu(const ModelConfig& c, std::span<const LayerSegment> segments, const KdaScratch& m, size_t slots,
                       ThreadPool* pool) {
  const size_t H = c.kda_num_heads, D = c.kda_head_dim, HD = H * D;
  parallel_for_slots(pool, segments.size() * H, slots, [&](size_t slot, size_t i0, size_t i1) {
    for (size_t item = i0; item < i1; ++item) {
      const LayerSegment& seg = segments[item / H];
      const size_t h = item % H;
      float* S = seg.state->kda.S.data() + h * D * D;
      for (size_t t = seg.begin; t < seg.begin + seg.count; ++t) {
        const size_t at = t * HD + h * D;
        kernels::kda_recurrent_step(S, m.q + at, m.k + at, m.v + at, m.g + at, m.beta[t * H + h], D, m.v + at,
                                    m.u + slot * D);
        const size_t row = t - seg.begin;
        if (seg.history && row + 1 < seg.count) std::copy(S, S + D * D, seg.history->S.data() + (row * H + h) * D * D);
      }
    }
  });
}

}  // namespace

void kda_reset(const ModelConfig& c, KdaState& s) {
  const size_t H = c.kda_num_heads, D = c.kda_head_dim, K = c.kda_conv_kernel;
  s.S.assign(H * D * D, 0.0f);
  s.conv_q.assign((K - 1) * H * D, 0.0f);
  s.conv_k.assign((K - 1) * H * D, 0.0f);
  s.conv_v.assign((K - 1) * H * D, 0.0f);
}

float kda_gate(const ModelConfig& c, float graw, float A_log_h, float dt_bias) {
  const float a = kernels::exp_f32(A_log_h);
  const float x = graw + dt_bias;
  if (c.kda_has_gate_lower_bound) return c.kda_gate_lower_bound * kernels::sigmoid(a * x);
  return -a * kernels::softplus(x);
}

size_t kda_scratch_floats(const ModelConfig& c, size_t rows, size_t slots) {
  return KdaScratch::floats(c, rows, std::max<size_t>(slots, 1));
}

void kda_forward(const ModelConfig& c, const KdaWeights& w, KdaState& state, const float* x, size_t n, float* out,
                 ThreadPool* pool) {
  ForwardScratch scratch;
  run_one_sequence(&LayerState::kda, state, n,
                   [&](std::span<const LayerSegment> one) { kda_forward(c, w, one, x, n, out, pool, scratch); });
}

void kda_forward(const ModelConfig& c, const KdaWeights& w, std::span<const LayerSegment> segments, const float* x,
                 size_t n, float* out, ThreadPool* pool, ForwardScratch& scratch) {
  const size_t H = c.kda_num_heads, D = c.kda_head_dim, K = c.kda_conv_kernel, HD = H * D;
  // Heads (of every sequence) are independent items; each slot of threads
  // gets its own u.
  const size_t items = segments.size() * H;
  const size_t slots = slots_for(pool, items);
  const KdaScratch m(c, n, slots, scratch);

  // Batched projections, in the order the weights stream
  // (bind_layer_weights): every weight matrix is read once for the n tokens.
  lin(w.q_proj, x, n, m.q, pool);
  lin(w.k_proj, x, n, m.k, pool);
  lin(w.v_proj, x, n, m.v, pool);
  lin(w.f_a_proj, x, n, m.fa, pool);
  lin(w.f_b_proj, m.fa, n, m.g, pool);
  lin(w.b_proj, x, n, m.beta, pool);

  // Each sequence's rows through its own conv carries.
  for (const LayerSegment& seg : segments) {
    KdaState& st = seg.state->kda;
    KdaRowHistory* hist = seg.history;
    if (hist) {
      hist->rows = seg.count;
      hist->S.resize(seg.count > 1 ? (seg.count - 1) * H * D * D : 0);
    }
    const size_t off = seg.begin * HD;
    auto conv = [&](const Bf16Matrix& cw, std::vector<float>& carry, float* raw, std::vector<float>* record) {
      short_conv_silu(cw, carry, raw + off, seg.count, HD, K, hist ? record : nullptr, m.next_carry, pool);
    };
    conv(w.q_conv, st.conv_q, m.q, hist ? &hist->conv_q : nullptr);
    conv(w.k_conv, st.conv_k, m.k, hist ? &hist->conv_k : nullptr);
    conv(w.v_conv, st.conv_v, m.v, hist ? &hist->conv_v : nullptr);
  }

  // In three passes, so that each sequence's recurrence is one call the
  // chunk's backend can take (a pass that keeps rollback rows, or has no
  // backend, runs it on the CPU): every value takes the same operations
  // whichever runs it, so the bits are the same.
  prepare_heads(c, w, segments, m, slots, pool);
  bool history = false;
  for (const LayerSegment& seg : segments) history = history || seg.history != nullptr;
  if (kernels::current_compute_backend() && !history) {
    for (const LayerSegment& seg : segments) {
      const size_t off = seg.begin * HD;
      kernels::kda_recurrence_on_backend(seg.state->kda.S.data(), m.q + off, m.k + off, m.v + off, m.g + off,
                                         m.beta + seg.begin * H, H, D, seg.count, m.v + off, pool);
    }
  } else {
    recurrence_on_cpu(c, segments, m, slots, pool);
  }
  // k is dead: the output gate's raw values take its rows.
  lin(w.g_proj, x, n, m.k, pool);
  finish_outputs(c, w, segments, m, slots, pool);

  lin(w.o_proj, m.v, n, out, pool);
}

void kda_rollback(const ModelConfig& c, const KdaRowHistory& history, size_t keep, KdaState& state) {
  if (keep == 0 || keep > history.rows) throw Error(ExitCode::kInternal, "KDA rollback outside the recorded rows");
  if (keep == history.rows) return;  // nothing to undo
  const size_t H = c.kda_num_heads, D = c.kda_head_dim, K = c.kda_conv_kernel, HD = H * D;
  const float* S = history.S.data() + (keep - 1) * H * D * D;
  std::copy(S, S + H * D * D, state.S.begin());
  // The carry after row keep-1 is ext rows keep .. keep+K-2.
  auto cut = [&](const std::vector<float>& ext, std::vector<float>& carry) {
    std::copy(ext.begin() + static_cast<ptrdiff_t>(keep * HD),
              ext.begin() + static_cast<ptrdiff_t>((keep + K - 1) * HD), carry.begin());
  };
  cut(history.conv_q, state.conv_q);
  cut(history.conv_k, state.conv_k);
  cut(history.conv_v, state.conv_v);
}

}  // namespace k3
