// The KDA recurrence step (kernels/kda_step.h) on cases whose result is
// exact (unit keys, no decay, full forgetting), against a double-precision
// transcription of SPEC section 2 on random data, and bit for bit against
// the plain float loops.
#include "kernels/kda_step.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/exp_f32.h"
#include "lib/simd_targets.h"
namespace k3::kernels {
namespace {

constexpr size_t D = 4;

TEST(KdaStep, FirstStepWritesValueUnderUnitKey) {
  test::for_each_target([&] {
    std::vector<float> S(D * D, 0.0f), o(D), u(D);
    const float q[D] = {0, 1, 0, 0}, k[D] = {0, 1, 0, 0}, v[D] = {1, 2, -3, 0.5f}, g[D] = {0, 0, 0, 0};
    kda_recurrent_step(S.data(), q, k, v, g, 1.0f, D, o.data(), u.data());
    for (size_t j = 0; j < D; ++j) {
      EXPECT_EQ(o[j], v[j]) << j;          // o = S^T q = row 1 = v
      EXPECT_EQ(S[1 * D + j], v[j]) << j;  // S = outer(k, v)
      EXPECT_EQ(S[0 * D + j], 0.0f);
      EXPECT_EQ(S[2 * D + j], 0.0f);
    }
  });
}

TEST(KdaStep, DeltaRuleMovesHalfWayWithBetaHalf) {
  test::for_each_target([&] {
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
  });
}

TEST(KdaStep, MinusInfinityGateForgetsTheRow) {
  test::for_each_target([&] {
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
  });
}

TEST(KdaStep, MatchesDoublePrecisionReference) {
  test::for_each_target([&] {
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
  });
}

// The plain loops of SPEC section 2, one float operation at a time (no fused
// multiply-add): the vectorised step must give exactly these bits.
void plain_step(float* S, const float* q, const float* k, const float* v, const float* g, float beta, size_t Dn,
                float* o, float* u) {
  for (size_t i = 0; i < Dn; ++i) {
    const float decay = exp_f32(g[i]);
    for (size_t j = 0; j < Dn; ++j) S[i * Dn + j] = S[i * Dn + j] * decay;
  }
  for (size_t j = 0; j < Dn; ++j) u[j] = v[j];
  for (size_t i = 0; i < Dn; ++i)
    for (size_t j = 0; j < Dn; ++j) {
      const volatile float prod = S[i * Dn + j] * k[i];  // rounded on its own
      u[j] = u[j] - prod;
    }
  for (size_t i = 0; i < Dn; ++i) {
    const float bk = beta * k[i];
    for (size_t j = 0; j < Dn; ++j) {
      const volatile float prod = bk * u[j];
      S[i * Dn + j] = S[i * Dn + j] + prod;
    }
  }
  for (size_t j = 0; j < Dn; ++j) o[j] = 0;
  for (size_t i = 0; i < Dn; ++i)
    for (size_t j = 0; j < Dn; ++j) {
      const volatile float prod = S[i * Dn + j] * q[i];
      o[j] = o[j] + prod;
    }
}

// Bit for bit against the plain loops, over many steps (so S carries any
// difference forward), at the bench head size and at sizes with a ragged
// end for every vector width.
TEST(KdaStep, VectorisedStepEqualsPlainLoopsBitForBit) {
  test::for_each_target([&] {
    std::mt19937 rng(17);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (size_t Dn : {128u, 37u, 5u}) {
      std::vector<float> S(Dn * Dn), o(Dn), u(Dn), q(Dn), k(Dn), v(Dn), g(Dn);
      for (float& x : S) x = nd(rng) * 0.1f;
      std::vector<float> Sp = S, op(Dn), up(Dn);
      for (int step = 0; step < 40; ++step) {
        for (size_t i = 0; i < Dn; ++i) {
          q[i] = nd(rng);
          k[i] = nd(rng) * 0.2f;
          v[i] = nd(rng);
          g[i] = -std::fabs(nd(rng)) * 0.2f;
        }
        const float beta = 0.3f + 0.01f * static_cast<float>(step);
        kda_recurrent_step(S.data(), q.data(), k.data(), v.data(), g.data(), beta, Dn, o.data(), u.data());
        plain_step(Sp.data(), q.data(), k.data(), v.data(), g.data(), beta, Dn, op.data(), up.data());
        ASSERT_EQ(std::memcmp(S.data(), Sp.data(), S.size() * sizeof(float)), 0) << "D " << Dn << " step " << step;
        ASSERT_EQ(std::memcmp(o.data(), op.data(), o.size() * sizeof(float)), 0) << "D " << Dn << " step " << step;
        ASSERT_EQ(std::memcmp(u.data(), up.data(), u.size() * sizeof(float)), 0) << "D " << Dn << " step " << step;
      }
    }
  });
}

}  // namespace
}  // namespace k3::kernels
