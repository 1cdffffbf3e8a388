// MLA on the compressed latent (kv_b_proj absorbed) against the expanded
// form computed in double from the same weights: per-head keys [k_nope, k_r]
// and values from kv_b_proj, causal softmax, sigmoid output gate.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "model/mla.h"
#include "random_weights.h"

namespace k3 {
namespace {

struct MlaCase : test::RandomMlaLayer {
  static constexpr int hidden = 16, heads = 3, nope = 4, rope = 2, vd = 5, ql = 6, kvl = 7;

  explicit MlaCase(bool gate) : RandomMlaLayer({hidden, heads, nope, rope, vd, ql, kvl}, gate, 21) {}

  static std::vector<double> rms_d(std::vector<double> x, const std::vector<float>& w, double eps) {
    double ms = 0;
    for (double v : x) ms += v * v;
    ms /= x.size();
    for (size_t i = 0; i < x.size(); ++i) x[i] = x[i] / std::sqrt(ms + eps) * w[i];
    return x;
  }

  // Expanded MLA in double over T tokens.
  std::vector<double> reference(const std::vector<float>& x, size_t T) const {
    std::vector<std::vector<double>> keys(T), values(T);  // [heads*(nope+rope)], [heads*vd]
    std::vector<double> out;
    for (size_t t = 0; t < T; ++t) {
      std::vector<double> xt(x.begin() + t * hidden, x.begin() + (t + 1) * hidden);
      std::vector<double> ckv = test::lin_d(xt, kv_a);
      std::vector<double> cn = rms_d(std::vector<double>(ckv.begin(), ckv.begin() + kvl), kv_ln.f, 1e-6);
      std::vector<double> kv = test::lin_d(cn, kv_b);  // [heads, nope + vd]
      for (int h = 0; h < heads; ++h) {
        for (int d = 0; d < nope; ++d) keys[t].push_back(kv[h * (nope + vd) + d]);
        for (int r = 0; r < rope; ++r) keys[t].push_back(ckv[kvl + r]);  // k_r shared, no norm
        for (int d = 0; d < vd; ++d) values[t].push_back(kv[h * (nope + vd) + nope + d]);
      }
      std::vector<double> q = test::lin_d(rms_d(test::lin_d(xt, q_a), q_ln.f, 1e-6), q_b);
      std::vector<double> gate = c.mla_use_output_gate ? test::lin_d(xt, g) : std::vector<double>();
      std::vector<double> oc(heads * vd, 0.0);
      for (int h = 0; h < heads; ++h) {
        std::vector<double> s(t + 1);
        double mx = -1e300;
        for (size_t j = 0; j <= t; ++j) {
          double dot = 0;
          for (int d = 0; d < nope + rope; ++d) dot += q[h * (nope + rope) + d] * keys[j][h * (nope + rope) + d];
          s[j] = dot / std::sqrt(double(nope + rope));
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (double& v : s) sum += v = std::exp(v - mx);
        for (size_t j = 0; j <= t; ++j)
          for (int d = 0; d < vd; ++d) oc[h * vd + d] += s[j] / sum * values[j][h * vd + d];
      }
      if (c.mla_use_output_gate)
        for (int i = 0; i < heads * vd; ++i) oc[i] *= test::sigmoid_d(gate[i]);
      std::vector<double> y = test::lin_d(oc, o);
      out.insert(out.end(), y.begin(), y.end());
    }
    return out;
  }
};

void expect_matches(bool gate) {
  MlaCase mc(gate);
  const size_t T = 6;
  std::mt19937 rng(4);
  std::vector<float> x = test::random_input(rng, T * MlaCase::hidden);
  MlaCache cache;
  std::vector<float> out(T * MlaCase::hidden);
  mla_forward(mc.c, mc.w, cache, x.data(), T, out.data(), nullptr);
  EXPECT_EQ(mla_cache_positions(mc.c, cache), static_cast<int64_t>(T));
  EXPECT_EQ(cache.latent.size(), T * (MlaCase::kvl + MlaCase::rope));  // latent only, not expanded
  std::vector<double> want = mc.reference(x, T);
  const test::RelativeError e = test::relative_error(out, want);
  EXPECT_GT(e.scale, 1e-3);
  EXPECT_LE(e.worst, 1e-5 * e.scale) << "worst " << e.worst << " scale " << e.scale;
}

TEST(Mla, AbsorbedLatentAttentionMatchesExpandedForm) { expect_matches(true); }
TEST(Mla, WithoutOutputGateMatchesExpandedForm) { expect_matches(false); }

TEST(Mla, BatchEqualsTokenByToken) {
  MlaCase mc(true);
  const size_t T = 8, hidden = MlaCase::hidden;
  std::mt19937 rng(8);
  std::vector<float> x = test::random_input(rng, T * hidden);
  MlaCache a, b;
  std::vector<float> batch(T * hidden), steps(T * hidden);
  mla_forward(mc.c, mc.w, a, x.data(), T, batch.data(), nullptr);
  for (size_t t = 0; t < T; ++t)
    mla_forward(mc.c, mc.w, b, x.data() + t * hidden, 1, steps.data() + t * hidden, nullptr);
  EXPECT_EQ(std::memcmp(batch.data(), steps.data(), batch.size() * sizeof(float)), 0);
  EXPECT_EQ(a.latent, b.latent);
}

}  // namespace
}  // namespace k3
