// Small random weights for block tests: BF16 matrices whose exact values are
// also kept in double, so reference computations use the same numbers.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/bf16.h"
#include "model/config.h"
#include "model/weights.h"

namespace k3::test {

struct RandomBf16 {
  std::vector<uint16_t> bits;
  std::vector<double> v;  // exact values
  int64_t rows = 0, cols = 0;

  RandomBf16() = default;
  RandomBf16(std::mt19937& rng, int64_t r, int64_t c, double scale) : rows(r), cols(c) {
    std::normal_distribution<double> dist(0.0, scale);
    for (int64_t i = 0; i < r * c; ++i) {
      bits.push_back(kernels::f32_to_bf16(static_cast<float>(dist(rng))));
      v.push_back(kernels::bf16_to_f32(bits.back()));
    }
  }
  Bf16Matrix view() const { return Bf16Matrix{bits.data(), rows, cols}; }
  double at(int64_t r, int64_t c) const { return v[r * cols + c]; }
};

struct RandomF32 {
  std::vector<float> f;
  RandomF32() = default;
  RandomF32(std::mt19937& rng, int64_t n, double mean, double scale) {
    std::normal_distribution<double> dist(mean, scale);
    for (int64_t i = 0; i < n; ++i) f.push_back(static_cast<float>(dist(rng)));
  }
  F32Vector view() const { return F32Vector{f.data(), static_cast<int64_t>(f.size())}; }
};

// A random MLA layer of the given widths: a config holding them and its
// weights, drawn from `seed` in one fixed order (q_a, q_b, kv_a, kv_b, the
// output gate, o, then the two norms), so a test's numbers depend only on
// the widths and the seed. The weights point into this object: it is
// neither copied nor moved.
struct RandomMlaLayer {
  struct Widths {
    int hidden, heads, nope, rope, vd, ql, kvl;
  };
  ModelConfig c;
  RandomBf16 q_a, q_b, kv_a, kv_b, g, o;
  RandomF32 q_ln, kv_ln;
  MlaWeights w;

  RandomMlaLayer(const Widths& d, bool gate, uint32_t seed) {
    c.hidden_size = d.hidden;
    c.mla_num_heads = d.heads;
    c.qk_nope_head_dim = d.nope;
    c.qk_rope_head_dim = d.rope;
    c.v_head_dim = d.vd;
    c.q_lora_rank = d.ql;
    c.kv_lora_rank = d.kvl;
    c.mla_use_output_gate = gate;
    std::mt19937 rng(seed);
    q_a = {rng, d.ql, d.hidden, 0.5};
    q_b = {rng, d.heads * (d.nope + d.rope), d.ql, 1.0};
    kv_a = {rng, d.kvl + d.rope, d.hidden, 0.5};
    kv_b = {rng, d.heads * (d.nope + d.vd), d.kvl, 1.0};
    g = {rng, d.heads * d.vd, d.hidden, 0.3};
    o = {rng, d.hidden, d.heads * d.vd, 0.3};
    q_ln = {rng, d.ql, 1.0, 0.1};
    kv_ln = {rng, d.kvl, 1.0, 0.1};
    w = MlaWeights{
        q_a.view(), q_ln.view(), q_b.view(), kv_a.view(), kv_ln.view(), kv_b.view(), gate ? g.view() : Bf16Matrix{},
        o.view()};
  }
  RandomMlaLayer(const RandomMlaLayer&) = delete;
  RandomMlaLayer& operator=(const RandomMlaLayer&) = delete;
};

// A random KDA layer of the given widths (heads of `dim`, the short conv's
// `kernel`), with the lower-bound gate or softplus: a config holding them
// and its weights, drawn from `seed` in one fixed order (q, k, v, their conv
// taps, f_a, f_b, b, g, o, the output norm, A_log, dt_bias). bind() points
// `w` at them again after a test replaces one (A_log's stored values, say).
// The weights point into this object: it is neither copied nor moved.
struct RandomKdaLayer {
  struct Widths {
    int hidden, heads, dim, kernel;
  };
  ModelConfig c;
  RandomBf16 q, k, v, qc, kc, vc, fa, fb, b, g, o;
  RandomF32 o_norm, A_log, dt_bias;
  KdaWeights w;

  RandomKdaLayer(const Widths& d, bool lower_bound, uint32_t seed) {
    const int HD = d.heads * d.dim;
    c.hidden_size = d.hidden;
    c.kda_num_heads = d.heads;
    c.kda_head_dim = d.dim;
    c.kda_conv_kernel = d.kernel;
    c.rms_norm_eps = 1e-5f;
    c.kda_has_gate_lower_bound = lower_bound;
    c.kda_gate_lower_bound = -5.0f;
    std::mt19937 rng(seed);
    q = {rng, HD, d.hidden, 0.5};
    k = {rng, HD, d.hidden, 0.5};
    v = {rng, HD, d.hidden, 0.5};
    qc = {rng, HD, d.kernel, 0.5};
    kc = {rng, HD, d.kernel, 0.5};
    vc = {rng, HD, d.kernel, 0.5};
    fa = {rng, d.dim, d.hidden, 0.5};
    fb = {rng, HD, d.dim, 0.5};
    b = {rng, d.heads, d.hidden, 0.5};
    g = {rng, HD, d.hidden, 0.3};
    o = {rng, d.hidden, HD, 0.3};
    o_norm = {rng, d.dim, 1.0, 0.1};
    A_log = {rng, d.dim, 0.5, 0.5};
    dt_bias = {rng, HD, -1.0, 0.5};
    bind();
  }
  void bind() {
    w = KdaWeights{q.view(),  k.view(), v.view(), qc.view(), kc.view(),     vc.view(),    fa.view(),
                   fb.view(), b.view(), g.view(), o.view(),  o_norm.view(), A_log.view(), dt_bias.view()};
  }
  RandomKdaLayer(const RandomKdaLayer&) = delete;
  RandomKdaLayer& operator=(const RandomKdaLayer&) = delete;
};

inline std::vector<float> random_input(std::mt19937& rng, size_t n, double scale = 1.0) {
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<float> x(n);
  for (float& v : x) v = static_cast<float>(dist(rng));
  return x;
}

// y = x @ W^T in double.
inline std::vector<double> lin_d(const std::vector<double>& x, const RandomBf16& W) {
  std::vector<double> y(W.rows, 0.0);
  for (int64_t r = 0; r < W.rows; ++r)
    for (int64_t c = 0; c < W.cols; ++c) y[r] += W.at(r, c) * x[c];
  return y;
}

inline double sigmoid_d(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// How far float results are from a double-precision reference loop: the
// largest |got - want| and the largest |want| it is judged against.
struct RelativeError {
  double worst = 0, scale = 0;
};
inline RelativeError relative_error(const std::vector<float>& got, const std::vector<double>& want) {
  RelativeError e;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    e.worst = std::max(e.worst, std::abs(got[i] - want[i]));
    e.scale = std::max(e.scale, std::abs(want[i]));
  }
  return e;
}

}  // namespace k3::test
