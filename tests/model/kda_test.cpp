// KDA against an explicit double-precision loop over tokens written from the
// SPEC formulas, for both gate forms; and batch/split bit-identity.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "model/forward_scratch.h"
#include "model/k3_geometry.h"
#include "model/kda.h"
#include "random_weights.h"

namespace k3 {
namespace {

// Three heads of 4 over a hidden size of 12.
struct KdaCase : test::RandomKdaLayer {
  explicit KdaCase(bool lower_bound) : RandomKdaLayer({12, 3, 4, 4}, lower_bound, 11) {
    // A_log: real values for the H heads, zero padding up to D (as stored).
    A_log.f = {std::log(2.0f), std::log(9.0f), std::log(1.5f), 0.0f};
    bind();
  }

  std::vector<double> reference(const std::vector<float>& x, size_t T) const {
    const int H = 3, D = 4, hidden = 12, HD = 12, K = 4;
    std::vector<std::vector<double>> rq, rk, rv;  // raw projections per token
    std::vector<double> S(H * D * D, 0.0), out;
    for (size_t t = 0; t < T; ++t) {
      std::vector<double> xt(x.begin() + t * hidden, x.begin() + (t + 1) * hidden);
      rq.push_back(test::lin_d(xt, q));
      rk.push_back(test::lin_d(xt, k));
      rv.push_back(test::lin_d(xt, v));
      auto conv = [&](const std::vector<std::vector<double>>& raw, const test::RandomBf16& w) {
        std::vector<double> y(HD);
        for (int ch = 0; ch < HD; ++ch) {
          double acc = 0;
          for (int j = 0; j < K; ++j) {  // tap K-1 is the current input, tap 0 is t-3
            const long src = static_cast<long>(t) - (K - 1) + j;
            if (src >= 0) acc += w.at(ch, j) * raw[src][ch];
          }
          y[ch] = acc * test::sigmoid_d(acc);
        }
        return y;
      };
      std::vector<double> qt = conv(rq, qc), kt = conv(rk, kc), vt = conv(rv, vc);
      std::vector<double> graw = test::lin_d(test::lin_d(xt, fa), fb);
      std::vector<double> braw = test::lin_d(xt, b), gate = test::lin_d(xt, g);
      std::vector<double> o_all(HD);
      for (int h = 0; h < H; ++h) {
        double nq = 0, nk = 0;
        for (int d = 0; d < D; ++d) nq += qt[h * D + d] * qt[h * D + d], nk += kt[h * D + d] * kt[h * D + d];
        std::vector<double> qh(D), kh(D), vh(D), gh(D);
        for (int d = 0; d < D; ++d) {
          qh[d] = qt[h * D + d] / std::sqrt(nq + 1e-6) / std::sqrt(double(D));
          kh[d] = kt[h * D + d] / std::sqrt(nk + 1e-6);
          vh[d] = vt[h * D + d];
          const double a = std::exp(double(A_log.f[h]));  // by head
          const double xg = graw[h * D + d] + dt_bias.f[h * D + d];
          gh[d] = c.kda_has_gate_lower_bound ? -5.0 * test::sigmoid_d(a * xg) : -a * std::log1p(std::exp(xg));
        }
        const double beta = test::sigmoid_d(braw[h]);
        double* Sh = S.data() + h * D * D;
        for (int i = 0; i < D; ++i)
          for (int j = 0; j < D; ++j) Sh[i * D + j] *= std::exp(gh[i]);
        std::vector<double> u(D);
        for (int j = 0; j < D; ++j) {
          double stk = 0;
          for (int i = 0; i < D; ++i) stk += Sh[i * D + j] * kh[i];
          u[j] = vh[j] - stk;
        }
        for (int i = 0; i < D; ++i)
          for (int j = 0; j < D; ++j) Sh[i * D + j] += beta * kh[i] * u[j];
        std::vector<double> oh(D, 0.0);
        for (int j = 0; j < D; ++j)
          for (int i = 0; i < D; ++i) oh[j] += Sh[i * D + j] * qh[i];
        double ms = 0;
        for (double val : oh) ms += val * val;
        ms /= D;
        for (int d = 0; d < D; ++d)
          o_all[h * D + d] = oh[d] / std::sqrt(ms + 1e-5) * o_norm.f[d] * test::sigmoid_d(gate[h * D + d]);
      }
      std::vector<double> y = test::lin_d(o_all, o);
      out.insert(out.end(), y.begin(), y.end());
    }
    return out;
  }
};

void expect_matches_reference(bool lower_bound) {
  KdaCase kc(lower_bound);
  const size_t T = 7, hidden = 12;
  std::mt19937 rng(5);
  std::vector<float> x = test::random_input(rng, T * hidden);
  KdaState state;
  kda_reset(kc.c, state);
  std::vector<float> out(T * hidden);
  kda_forward(kc.c, kc.w, state, x.data(), T, out.data(), nullptr);
  std::vector<double> want = kc.reference(x, T);
  const test::RelativeError e = test::relative_error(out, want);
  EXPECT_GT(e.scale, 1e-3);
  EXPECT_LE(e.worst, 1e-5 * e.scale) << "worst " << e.worst << " scale " << e.scale;
}

TEST(Kda, LowerBoundGateMatchesDoubleLoop) { expect_matches_reference(true); }
TEST(Kda, SoftplusGateMatchesDoubleLoop) { expect_matches_reference(false); }

TEST(Kda, GateForms) {
  ModelConfig c;
  c.kda_has_gate_lower_bound = true;
  c.kda_gate_lower_bound = -5.0f;
  // lb * sigmoid(exp(A_log) * (graw + dt_bias))
  EXPECT_NEAR(kda_gate(c, 0.3f, std::log(4.0f), -0.1f), -5.0 * test::sigmoid_d(4.0 * 0.2), 1e-6);
  c.kda_has_gate_lower_bound = false;
  EXPECT_NEAR(kda_gate(c, 0.3f, std::log(4.0f), -0.1f), -4.0 * std::log1p(std::exp(0.2)), 1e-5);
}

TEST(Kda, BatchEqualsTokenByTokenAndSplits) {
  KdaCase kc(true);
  const size_t T = 9, hidden = 12;
  std::mt19937 rng(9);
  std::vector<float> x = test::random_input(rng, T * hidden);
  KdaState a, b, s;
  kda_reset(kc.c, a);
  kda_reset(kc.c, b);
  kda_reset(kc.c, s);
  std::vector<float> batch(T * hidden), steps(T * hidden), split(T * hidden);
  kda_forward(kc.c, kc.w, a, x.data(), T, batch.data(), nullptr);
  for (size_t t = 0; t < T; ++t)
    kda_forward(kc.c, kc.w, b, x.data() + t * hidden, 1, steps.data() + t * hidden, nullptr);
  kda_forward(kc.c, kc.w, s, x.data(), 2, split.data(), nullptr);
  kda_forward(kc.c, kc.w, s, x.data() + 2 * hidden, T - 2, split.data() + 2 * hidden, nullptr);
  EXPECT_EQ(std::memcmp(batch.data(), steps.data(), batch.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(batch.data(), split.data(), batch.size() * sizeof(float)), 0);
  EXPECT_EQ(a.S, b.S);
  EXPECT_EQ(a.conv_q, b.conv_q);
  EXPECT_EQ(a.conv_v, s.conv_v);
}

// The op area: four H*D rows a row (q; k then the output gate; v then the
// output; the gates), f_a's D and beta's H, plus the conv's next carry and
// each slot's u whatever the rows. At K3 geometry that is 197,504 bytes a
// row (the fused form took 344,960: seven H*D rows with the conv's copy).
TEST(Kda, ScratchFollowsItsFormula) {
  const ModelConfig c = k3_reference_config();
  const size_t H = c.kda_num_heads, D = c.kda_head_dim, K = c.kda_conv_kernel, HD = H * D;
  auto pad = [](size_t floats) { return ScratchCarver<float>::padded(floats); };
  for (size_t rows : {1u, 7u, 1024u})
    for (size_t slots : {1u, 3u})
      EXPECT_EQ(kda_scratch_floats(c, rows, slots),
                4 * pad(rows * HD) + pad(rows * D) + pad(rows * H) + pad((K - 1) * HD) + pad(slots * D))
          << rows << " rows, " << slots << " slots";
  EXPECT_EQ((kda_scratch_floats(c, 1025, 1) - kda_scratch_floats(c, 1024, 1)) * sizeof(float), 197504u);
}

}  // namespace
}  // namespace k3
