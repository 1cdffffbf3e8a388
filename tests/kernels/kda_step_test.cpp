// The KDA recurrence step (kernels/kda_step.h) on cases whose result is
// exact (unit keys, no decay, full forgetting), and against a
// double-precision transcription of SPEC section 2 on random data.
#include "kernels/kda_step.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace k3::kernels {
namespace {

constexpr size_t D = 4;

TEST(KdaStep, FirstStepWritesValueUnderUnitKey) {
  std::vector<float> S(D * D, 0.0f), o(D), u(D);
  const float q[D] = {0, 1, 0, 0}, k[D] = {0, 1, 0, 0}, v[D] = {1, 2, -3, 0.5f}, g[D] = {0, 0, 0, 0};
  kda_recurrent_step(S.data(), q, k, v, g, 1.0f, D, o.data(), u.data());
  for (size_t j = 0; j < D; ++j) {
    EXPECT_EQ(o[j], v[j]) << j;          // o = S^T q = row 1 = v
    EXPECT_EQ(S[1 * D + j], v[j]) << j;  // S = outer(k, v)
    EXPECT_EQ(S[0 * D + j], 0.0f);
    EXPECT_EQ(S[2 * D + j], 0.0f);
  }
}

TEST(KdaStep, DeltaRuleMovesHalfWayWithBetaHalf) {
  std::vector<float> S(D * D, 0.0f), o(D), u(D);
  const float k[D] = {1, 0, 0, 0}, g[D] = {0, 0, 0, 0};
  const float v1[D] = {2, 4, -8, 1}, v2[D] = {4, 0, 8, 3};
  const float q1[D] = {1, 0, 0, 0};
  kda_recurrent_step(S.data(), q1, k, v1, g, 1.0f, D, o.data(), u.data());
  // u = v2 - S^T k = v2 - v1; S row 0 += 0.5 * u -> (v1 + v2) / 2.
  const float q2[D] = {1, 1, 0, 0};
  kda_recurrent_step(S.data(), q2, k, v2, g, 0.5f, D, o.data(), u.data());
  for (size_t j = 0; j < D; ++j) {
    EXPECT_EQ(u[j], v2[j] - v1[j]) << j;
    EXPECT_EQ(S[j], (v1[j] + v2[j]) / 2) << j;
    EXPECT_EQ(o[j], (v1[j] + v2[j]) / 2) << j;  // row 1 is zero
  }
}

TEST(KdaStep, MinusInfinityGateForgetsTheRow) {
  std::vector<float> S(D * D), o(D), u(D);
  for (size_t i = 0; i < D * D; ++i) S[i] = static_cast<float>(i + 1);
  const float q[D] = {1, 1, 1, 1}, k[D] = {0, 0, 0, 0}, v[D] = {5, 6, 7, 8};
  const float g[D] = {0, -INFINITY, 0, 0};
  kda_recurrent_step(S.data(), q, k, v, g, 1.0f, D, o.data(), u.data());
  for (size_t j = 0; j < D; ++j) {
    EXPECT_EQ(S[1 * D + j], 0.0f) << j;                        // exp(-inf) = 0
    EXPECT_EQ(S[0 * D + j], static_cast<float>(j + 1)) << j;   // k = 0: nothing written
    EXPECT_EQ(o[j], S[j] + S[2 * D + j] + S[3 * D + j]) << j;  // exact small integers
  }
}

TEST(KdaStep, MatchesDoublePrecisionReference) {
  const size_t Dn = 16;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::vector<float> S(Dn * Dn, 0.0f), o(Dn), u(Dn);
  std::vector<double> R(Dn * Dn, 0.0);
  for (int step = 0; step < 6; ++step) {
    std::vector<float> q(Dn), k(Dn), v(Dn), g(Dn);
    double kn = 0;
    for (size_t i = 0; i < Dn; ++i) {
      q[i] = uni(rng);
      k[i] = uni(rng);
      v[i] = uni(rng);
      g[i] = -0.5f * (uni(rng) + 1.0f);
      kn += double(k[i]) * k[i];
    }
    for (float& x : k) x = static_cast<float>(x / std::sqrt(kn));
    const float beta = 0.25f + 0.5f * (uni(rng) + 1.0f) / 2;
    kda_recurrent_step(S.data(), q.data(), k.data(), v.data(), g.data(), beta, Dn, o.data(), u.data());
    // S = S * exp(g)[:, None]; S += outer(beta * k, v - S^T k); o = S^T q
    for (size_t i = 0; i < Dn; ++i)
      for (size_t j = 0; j < Dn; ++j) R[i * Dn + j] *= std::exp(double(g[i]));
    std::vector<double> ur(Dn);
    for (size_t j = 0; j < Dn; ++j) {
      ur[j] = v[j];
      for (size_t i = 0; i < Dn; ++i) ur[j] -= R[i * Dn + j] * k[i];
    }
    for (size_t i = 0; i < Dn; ++i)
      for (size_t j = 0; j < Dn; ++j) R[i * Dn + j] += double(beta) * k[i] * ur[j];
    for (size_t j = 0; j < Dn; ++j) {
      double orf = 0;
      for (size_t i = 0; i < Dn; ++i) orf += R[i * Dn + j] * q[i];
      EXPECT_NEAR(o[j], orf, 1e-5 * (1 + std::fabs(orf))) << "step " << step << " j " << j;
    }
  }
}

}  // namespace
}  // namespace k3::kernels
