#include "model/kda.h"

#include <cmath>
#include <vector>

#include "kernels/activations.h"
#include "kernels/kda_step.h"
#include "kernels/short_conv.h"
#include "kernels/thread_pool.h"
#include "model/linear.h"
#include "model/rms_norm.h"

namespace k3 {

namespace {

// l2normalize(x) = x / sqrt(sum(x^2) + 1e-6) (flash-linear-attention's form:
// the epsilon sits inside the square root), times `scale`.
void l2_normalize(float* x, size_t D, float scale) {
  double ss = 0;
  for (size_t d = 0; d < D; ++d) ss += static_cast<double>(x[d]) * x[d];
  const float inv = 1.0f / std::sqrt(static_cast<float>(ss) + 1e-6f);
  for (size_t d = 0; d < D; ++d) x[d] = x[d] * inv * scale;
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
  if (c.kda_has_gate_lower_bound) return c.kda_gate_lower_bound * sigmoid(a * x);
  return -a * softplus(x);
}

void kda_forward(const ModelConfig& c, const KdaWeights& w, KdaState& state, const float* x, size_t n, float* out,
                 ThreadPool* pool) {
  const size_t H = c.kda_num_heads, D = c.kda_head_dim, K = c.kda_conv_kernel, HD = H * D;

  // Batched projections: every weight matrix is read once for the n tokens.
  std::vector<float> q(n * HD), k(n * HD), v(n * HD), fa(n * D), graw(n * HD), braw(n * H), gate(n * HD);
  lin(w.q_proj, x, n, q.data(), pool);
  lin(w.k_proj, x, n, k.data(), pool);
  lin(w.v_proj, x, n, v.data(), pool);
  lin(w.f_a_proj, x, n, fa.data(), pool);
  lin(w.f_b_proj, fa.data(), n, graw.data(), pool);
  lin(w.b_proj, x, n, braw.data(), pool);
  lin(w.g_proj, x, n, gate.data(), pool);

  std::vector<float> conv_scratch((K - 1 + n) * HD);
  kernels::short_conv_silu(w.q_conv.data, state.conv_q.data(), q.data(), n, HD, K, conv_scratch.data());
  kernels::short_conv_silu(w.k_conv.data, state.conv_k.data(), k.data(), n, HD, K, conv_scratch.data());
  kernels::short_conv_silu(w.v_conv.data, state.conv_v.data(), v.data(), n, HD, K, conv_scratch.data());

  // Heads are independent: each carries its own S through the n tokens.
  std::vector<float> o(n * HD);
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(D));
  auto run_heads = [&](size_t h0, size_t h1) {
    std::vector<float> g(D), u(D);
    for (size_t h = h0; h < h1; ++h) {
      float* S = state.S.data() + h * D * D;
      const float A_log_h = w.A_log.data[h];  // indexed by head, never by channel
      for (size_t t = 0; t < n; ++t) {
        float* qh = q.data() + t * HD + h * D;
        float* kh = k.data() + t * HD + h * D;
        const float* vh = v.data() + t * HD + h * D;
        l2_normalize(qh, D, q_scale);
        l2_normalize(kh, D, 1.0f);
        for (size_t d = 0; d < D; ++d) g[d] = kda_gate(c, graw[t * HD + h * D + d], A_log_h, w.dt_bias.data[h * D + d]);
        const float beta = sigmoid(braw[t * H + h]);
        float* oh = o.data() + t * HD + h * D;
        kernels::kda_recurrent_step(S, qh, kh, vh, g.data(), beta, D, oh, u.data());
        // Output: per-head rms with o_norm, then the full-rank sigmoid gate.
        rms_norm(oh, 1, D, w.o_norm.data, c.rms_norm_eps, oh);
        for (size_t d = 0; d < D; ++d) oh[d] *= sigmoid(gate[t * HD + h * D + d]);
      }
    }
  };
  if (pool)
    pool->parallel_for(H, 1, run_heads);
  else
    run_heads(0, H);

  lin(w.o_proj, o.data(), n, out, pool);
}

}  // namespace k3
