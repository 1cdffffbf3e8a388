#include "model/kda.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/error.h"
#include "common/thread_pool.h"
#include "kernels/activations.h"
#include "kernels/compute_backend.h"
#include "kernels/kda_recurrence.h"
#include "kernels/kda_step.h"
#include "kernels/l2_normalize.h"
#include "kernels/rms_norm.h"
#include "kernels/short_conv.h"
#include "model/forward_scratch.h"
#include "model/linear.h"

namespace k3 {

namespace {

// KDA's short conv over n rows of one sequence (kernels/short_conv.h);
// `record`, when given, keeps [carry rows, raw rows] so the carry after any
// row can be cut from it for a rollback; otherwise `ext` is the scratch.
void short_conv_silu(const Bf16Matrix& w, std::vector<float>& carry, float* raw, size_t n, size_t channels, size_t K,
                     std::vector<float>* record, float* ext, ThreadPool* pool) {
  if (record) {
    record->resize((K - 1 + n) * channels);
    ext = record->data();
  }
  kernels::short_conv_silu(w.data, carry.data(), raw, n, channels, K, ext, pool);
}

// The pieces of KDA's scratch, in carving order.
struct KdaScratch {
  float *q, *k, *v, *fa, *graw, *braw, *gate, *o, *ext, *slots;
  static size_t floats(const ModelConfig& c, size_t n, size_t slots) {
    using C = ScratchCarver<float>;
    const size_t H = c.kda_num_heads, D = c.kda_head_dim, K = c.kda_conv_kernel, HD = H * D;
    return 6 * C::padded(n * HD) + C::padded(n * D) + C::padded(n * H) + C::padded((K - 1 + n) * HD) +
           C::padded(slots * 2 * D);
  }
  KdaScratch(const ModelConfig& c, size_t n, size_t slots, ForwardScratch& scratch) {
    const size_t H = c.kda_num_heads, D = c.kda_head_dim, K = c.kda_conv_kernel, HD = H * D;
    ScratchCarver<float> carve(scratch.op_floats(floats(c, n, slots)));
    q = carve.take(n * HD);
    k = carve.take(n * HD);
    v = carve.take(n * HD);
    fa = carve.take(n * D);
    graw = carve.take(n * HD);
    braw = carve.take(n * H);
    gate = carve.take(n * HD);
    o = carve.take(n * HD);
    ext = carve.take((K - 1 + n) * HD);
    this->slots = carve.take(slots * 2 * D);
  }
};

// q and k of one head and token normalised in place (flash-linear-attention's
// l2norm, q also scaled by 1/sqrt(D)).
void normalize_qk(float* qh, float* kh, size_t D) {
  kernels::l2_normalize(qh, D, 1.0f / std::sqrt(static_cast<float>(D)));
  kernels::l2_normalize(kh, D, 1.0f);
}

// A head's output row after the recurrence: per-head rms with o_norm, then
// the full-rank sigmoid gate.
void finish_output(const ModelConfig& c, const KdaWeights& w, float* oh, const float* gate) {
  const size_t D = c.kda_head_dim;
  kernels::rms_norm(oh, 1, D, w.o_norm.data, c.rms_norm_eps, oh);
  for (size_t d = 0; d < D; ++d) oh[d] *= kernels::sigmoid(gate[d]);
}

// Every head of every segment, token by token, each step of a token in turn
// (the per-row S copies of seg.history kept for a rollback).
void kda_heads_fused(const ModelConfig& c, const KdaWeights& w, std::span<const LayerSegment> segments,
                     const KdaScratch& m, size_t slots, ThreadPool* pool) {
  const size_t H = c.kda_num_heads, D = c.kda_head_dim, HD = H * D;
  parallel_for_slots(pool, segments.size() * H, slots, [&](size_t slot, size_t i0, size_t i1) {
    float* g = m.slots + slot * 2 * D;
    float* u = g + D;
    for (size_t item = i0; item < i1; ++item) {
      const LayerSegment& seg = segments[item / H];
      const size_t h = item % H;
      float* S = seg.state->kda.S.data() + h * D * D;
      const float A_log_h = w.A_log.data[h];  // indexed by head, never by channel
      for (size_t t = seg.begin; t < seg.begin + seg.count; ++t) {
        float* qh = m.q + t * HD + h * D;
        float* kh = m.k + t * HD + h * D;
        const float* vh = m.v + t * HD + h * D;
        normalize_qk(qh, kh, D);
        for (size_t d = 0; d < D; ++d)
          g[d] = kda_gate(c, m.graw[t * HD + h * D + d], A_log_h, w.dt_bias.data[h * D + d]);
        const float beta = kernels::sigmoid(m.braw[t * H + h]);
        float* oh = m.o + t * HD + h * D;
        kernels::kda_recurrent_step(S, qh, kh, vh, g, beta, D, oh, u);
        const size_t row = t - seg.begin;
        if (seg.history && row + 1 < seg.count) std::copy(S, S + D * D, seg.history->S.data() + (row * H + h) * D * D);
        finish_output(c, w, oh, m.gate + t * HD + h * D);
      }
    }
  });
}

// The same steps in three passes, so the recurrence of a sequence's tokens
// is one call the chunk's backend can take: q and k normalised, the gates
// and beta written over their raw values; the recurrence; the outputs.
// Every value takes the fused loop's operations, so the bits are its bits.
void kda_heads_staged(const ModelConfig& c, const KdaWeights& w, std::span<const LayerSegment> segments,
                      const KdaScratch& m, ThreadPool* pool) {
  const size_t H = c.kda_num_heads, D = c.kda_head_dim, HD = H * D, items = segments.size() * H;
  const size_t slots = slots_for(pool, items);
  parallel_for_slots(pool, items, slots, [&](size_t, size_t i0, size_t i1) {
    for (size_t item = i0; item < i1; ++item) {
      const LayerSegment& seg = segments[item / H];
      const size_t h = item % H;
      for (size_t t = seg.begin; t < seg.begin + seg.count; ++t) {
        normalize_qk(m.q + t * HD + h * D, m.k + t * HD + h * D, D);
        float* gh = m.graw + t * HD + h * D;
        for (size_t d = 0; d < D; ++d) gh[d] = kda_gate(c, gh[d], w.A_log.data[h], w.dt_bias.data[h * D + d]);
        m.braw[t * H + h] = kernels::sigmoid(m.braw[t * H + h]);
      }
    }
  });
  for (const LayerSegment& seg : segments) {
    const size_t off = seg.begin * HD;
    kernels::kda_recurrence_on_backend(seg.state->kda.S.data(), m.q + off, m.k + off, m.v + off, m.graw + off,
                                       m.braw + seg.begin * H, H, D, seg.count, m.o + off, pool);
  }
  parallel_for_slots(pool, items, slots, [&](size_t, size_t i0, size_t i1) {
    for (size_t item = i0; item < i1; ++item) {
      const LayerSegment& seg = segments[item / H];
      const size_t h = item % H;
      for (size_t t = seg.begin; t < seg.begin + seg.count; ++t)
        finish_output(c, w, m.o + t * HD + h * D, m.gate + t * HD + h * D);
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
  const float a = std::exp(A_log_h);
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
  // gets its own g and u.
  const size_t items = segments.size() * H;
  const size_t slots = slots_for(pool, items);
  const KdaScratch m(c, n, slots, scratch);

  // Batched projections: every weight matrix is read once for the n tokens.
  lin(w.q_proj, x, n, m.q, pool);
  lin(w.k_proj, x, n, m.k, pool);
  lin(w.v_proj, x, n, m.v, pool);
  lin(w.f_a_proj, x, n, m.fa, pool);
  lin(w.f_b_proj, m.fa, n, m.graw, pool);
  lin(w.b_proj, x, n, m.braw, pool);
  lin(w.g_proj, x, n, m.gate, pool);

  // Each sequence's rows through its own conv carries.
  for (const LayerSegment& seg : segments) {
    KdaState& st = seg.state->kda;
    KdaRowHistory* hist = seg.history;
    if (hist) {
      hist->rows = seg.count;
      hist->S.resize(seg.count > 1 ? (seg.count - 1) * H * D * D : 0);
    }
    const size_t off = seg.begin * HD;
    short_conv_silu(w.q_conv, st.conv_q, m.q + off, seg.count, HD, K, hist ? &hist->conv_q : nullptr, m.ext, pool);
    short_conv_silu(w.k_conv, st.conv_k, m.k + off, seg.count, HD, K, hist ? &hist->conv_k : nullptr, m.ext, pool);
    short_conv_silu(w.v_conv, st.conv_v, m.v + off, seg.count, HD, K, hist ? &hist->conv_v : nullptr, m.ext, pool);
  }

  // Each head carries its own S through its sequence's rows: on the chunk's
  // device when one is installed (and no rollback rows are kept), else on
  // the CPU with the steps around the recurrence fused per head and token.
  bool history = false;
  for (const LayerSegment& seg : segments) history = history || seg.history != nullptr;
  if (kernels::current_compute_backend() && !history) kda_heads_staged(c, w, segments, m, pool);
  else kda_heads_fused(c, w, segments, m, slots, pool);

  lin(w.o_proj, m.o, n, out, pool);
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
