// SiTU against its formula in double (the scalar step) and against the
// scalar step (the vector step), AttnRes against a hand computation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "common/thread_pool.h"
#include "kernels/attn_res.h"
#include "kernels/bf16.h"
#include "kernels/situ.h"
#include "lib/simd_targets.h"
#include "model/linear.h"
#include "model/situ_mlp.h"
#include "random_weights.h"

namespace k3 {
namespace {

double situ_d(double g, double u, double beta, double lbeta) {
  return beta * std::tanh(g / beta) * (1.0 / (1.0 + std::exp(-g))) * lbeta * std::tanh(u / lbeta);
}

TEST(Situ, ElementwiseMatchesFormula) {
  const kernels::SituParams p{4.0f, true, 25.0f};
  for (double g = -30; g <= 30; g += 0.37)
    for (double u : {-80.0, -3.0, -0.1, 0.0, 0.5, 7.0, 40.0}) {
      const double want = situ_d(g, u, 4.0, 25.0);
      EXPECT_NEAR(kernels::situ(static_cast<float>(g), static_cast<float>(u), p), want,
                  1e-5 * std::max(1.0, std::abs(want)))
          << g << " " << u;
    }
  // Saturation: for large g, a -> beta; large u, u' -> lbeta.
  EXPECT_NEAR(kernels::situ(60.0f, 1000.0f, p), 4.0 * 25.0, 1e-3);
  // Without linear beta the up branch passes through.
  const kernels::SituParams q{4.0f, false, 0.0f};
  EXPECT_NEAR(kernels::situ(1.5f, 100.0f, q), 4.0 * std::tanh(1.5 / 4.0) * test::sigmoid_d(1.5) * 100.0, 1e-3);
  // Not SwiGLU: silu(g) * u differs.
  EXPECT_GT(std::abs(kernels::situ(3.0f, 2.0f, p) - 3.0 * test::sigmoid_d(3.0) * 2.0), 0.1);
}

// The vector step (Highway's Tanh and Exp in place of libm's) against the
// scalar step: within a few float ulp everywhere, saturating ranges included,
// and exactly zero where the scalar sigmoid underflows to zero.
TEST(Situ, SpanWithinUlpsOfScalarStep) {
  test::for_each_target([&] {
    for (const kernels::SituParams p :
         {kernels::SituParams{4.0f, true, 25.0f}, kernels::SituParams{3.0f, false, 0.0f}}) {
      std::vector<float> g, u;
      for (float gv = -120.0f; gv <= 120.0f; gv += 0.0731f)
        for (float uv : {-900.0f, -40.0f, -3.0f, -0.01f, 0.0f, 0.7f, 12.0f, 60.0f}) {
          g.push_back(gv);
          u.push_back(uv);
        }
      std::vector<float> got = g;
      kernels::situ_span(got.data(), u.data(), got.size(), p);
      for (size_t i = 0; i < g.size(); ++i) {
        const float want = kernels::situ(g[i], u[i], p);
        EXPECT_NEAR(got[i], want, 2e-6f * std::abs(want)) << "g " << g[i] << " u " << u[i];
      }
    }
  });
}

TEST(Situ, SpanKeepsNonFiniteInputs) {
  test::for_each_target([&] {
    // Not on the fallback without SIMD (Highway's EMU128, listed as SCALAR;
    // a CPU without SSSE3 would pick it): its Exp converts the NaN and
    // infinite lanes to int in plain C++, which is undefined behaviour
    // (UBSan stops there). The SIMD targets convert in hardware.
    const std::string target = kernels::kernel_target_name();
    if (target == "SCALAR" || target == "EMU128") return;
    const kernels::SituParams p{4.0f, true, 25.0f};
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    std::vector<float> g = {nan, 1.0f, inf, -inf, 2.0f, -1e30f, 1e30f};
    const std::vector<float> u = {1.0f, nan, 2.0f, 2.0f, inf, 3.0f, -3.0f};
    std::vector<float> got = g;
    kernels::situ_span(got.data(), u.data(), got.size(), p);
    for (size_t i = 0; i < g.size(); ++i) {
      const float want = kernels::situ(g[i], u[i], p);
      if (std::isnan(want)) EXPECT_TRUE(std::isnan(got[i])) << i;
      else EXPECT_NEAR(got[i], want, 2e-6f * std::abs(want)) << i;
    }
  });
}

// A lane's result depends on its own inputs only: the same element gives the
// same bits alone, in a long span, and at every offset and ragged end (so
// the split over threads and the batch composition cannot change them).
TEST(Situ, SpanElementBitsIndependentOfPosition) {
  test::for_each_target([&] {
    const kernels::SituParams p{4.0f, true, 25.0f};
    std::mt19937 rng(5);
    const size_t count = 131;
    std::vector<float> g0 = test::random_input(rng, count, 6.0), u = test::random_input(rng, count, 30.0);
    std::vector<float> alone(count);
    for (size_t i = 0; i < count; ++i) {
      alone[i] = g0[i];
      kernels::situ_span(&alone[i], &u[i], 1, p);
    }
    for (size_t begin = 0; begin < 20; ++begin)
      for (size_t end : {count, count - 1, count - 7}) {
        std::vector<float> g = g0;
        kernels::situ_span(g.data() + begin, u.data() + begin, end - begin, p);
        EXPECT_EQ(std::memcmp(g.data() + begin, alone.data() + begin, (end - begin) * sizeof(float)), 0)
            << begin << " " << end;
      }
  });
}

// The in-place step gives each element exactly what the vector step gives it
// alone, inline and split over threads (the split must neither skip, repeat
// nor shift an element, whatever the chunk boundaries).
TEST(Situ, InplaceSplitOverThreadsMatchesElementAlone) {
  test::for_each_target([&] {
    std::mt19937 rng(11);
    const size_t count = 3 * 16384 + 17;  // several chunks and a ragged end
    std::vector<float> g0 = test::random_input(rng, count), u = test::random_input(rng, count);
    for (size_t i = 0; i < count; ++i) {
      g0[i] *= 8.0f;  // both saturating and linear ranges of tanh
      u[i] *= 40.0f;
    }
    for (const kernels::SituParams p :
         {kernels::SituParams{4.0f, true, 25.0f}, kernels::SituParams{3.0f, false, 0.0f}}) {
      std::vector<float> want = g0;
      for (size_t i = 0; i < count; ++i) kernels::situ_span(&want[i], &u[i], 1, p);
      std::vector<float> inline_g = g0;
      kernels::situ_inplace(inline_g.data(), u.data(), count, p, nullptr);
      EXPECT_EQ(std::memcmp(inline_g.data(), want.data(), count * sizeof(float)), 0);
      for (int threads : {2, 3}) {
        ThreadPool pool(threads);
        std::vector<float> g = g0;
        kernels::situ_inplace(g.data(), u.data(), count, p, &pool);
        EXPECT_EQ(std::memcmp(g.data(), want.data(), count * sizeof(float)), 0) << threads << " threads";
      }
    }
  });
}

TEST(Situ, MlpMatchesDoubleReference) {
  test::for_each_target([&] {
    std::mt19937 rng(7);
    const int hidden = 16, inter = 24, n = 3;
    test::RandomBf16 gate(rng, inter, hidden, 1.0), up(rng, inter, hidden, 2.0), down(rng, hidden, inter, 0.3);
    DenseMlpWeights w{gate.view(), up.view(), down.view()};
    const SituParams p{{4.0f, true, 25.0f}};
    std::vector<float> x = test::random_input(rng, n * hidden), out(n * hidden);
    situ_mlp(w, p, x.data(), n, out.data(), nullptr);
    for (int t = 0; t < n; ++t) {
      std::vector<double> xd(x.begin() + t * hidden, x.begin() + (t + 1) * hidden);
      std::vector<double> g = test::lin_d(xd, gate), u = test::lin_d(xd, up), h(inter);
      for (int i = 0; i < inter; ++i) h[i] = situ_d(g[i], u[i], 4.0, 25.0);
      std::vector<double> y = test::lin_d(h, down);
      for (int c = 0; c < hidden; ++c) EXPECT_NEAR(out[t * hidden + c], y[c], 1e-4 * (1 + std::abs(y[c])));
    }
  });
}

// situ_mlp runs gate, up and the SiTU step in one parallel region, each
// thread on its own rows; on 1-3 threads its output must be bit for bit that
// of the three products computed whole, one after the other, with the step
// applied in between (BF16 dense weights and MXFP4 expert weights; 1504
// intermediate rows so that 2 and 3 threads really split them).
TEST(Situ, MlpOnThreadsIsTheComposedProductsBitForBit) {
  test::for_each_target([&] {
    std::mt19937 rng(11);
    const size_t hidden = 64, inter = 1504;
    test::RandomBf16 gate(rng, inter, hidden, 1.0), up(rng, inter, hidden, 2.0), down(rng, hidden, inter, 0.3);
    std::uniform_int_distribution<int> byte(0, 255), scale(118, 130);
    std::vector<uint8_t> packed[3], scales[3];
    const size_t mx_rows[3] = {inter, inter, hidden}, mx_cols[3] = {hidden, hidden, inter};
    ExpertMatrix mx[3];
    for (int m = 0; m < 3; ++m) {
      packed[m].resize(mx_rows[m] * mx_cols[m] / 2);
      scales[m].resize(mx_rows[m] * mx_cols[m] / 32);
      for (auto& b : packed[m]) b = static_cast<uint8_t>(byte(rng));
      for (auto& b : scales[m]) b = static_cast<uint8_t>(scale(rng));
      mx[m].mx = Mxfp4Matrix{packed[m].data(), scales[m].data(), static_cast<int64_t>(mx_rows[m]),
                             static_cast<int64_t>(mx_cols[m])};
    }
    const DenseMlpWeights dense{gate.view(), up.view(), down.view()};
    const ExpertWeights expert{mx[0], mx[1], mx[2]};
    const SituParams p{{4.0f, true, 25.0f}};
    ThreadPool pools[] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
    for (size_t n : {1, 2, 5}) {
      SCOPED_TRACE("n=" + std::to_string(n));
      const std::vector<float> x = test::random_input(rng, n * hidden);
      for (int kind = 0; kind < 2; ++kind) {
        SCOPED_TRACE(kind == 0 ? "bf16" : "mxfp4");
        std::vector<float> g(n * inter), u(n * inter), want(n * hidden);
        if (kind == 0) {
          lin(dense.gate_proj, x.data(), n, g.data(), nullptr);
          lin(dense.up_proj, x.data(), n, u.data(), nullptr);
        } else {
          lin(expert.w1, x.data(), n, g.data(), nullptr);
          lin(expert.w3, x.data(), n, u.data(), nullptr);
        }
        kernels::situ_span(g.data(), u.data(), n * inter, p);  // the step the model runs, whole
        if (kind == 0) lin(dense.down_proj, g.data(), n, want.data(), nullptr);
        else lin(expert.w2, g.data(), n, want.data(), nullptr);
        for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pools[0], &pools[1], &pools[2]}) {
          std::vector<float> got(n * hidden);
          if (kind == 0) situ_mlp(dense, p, x.data(), n, got.data(), pool);
          else situ_mlp(expert, p, x.data(), n, got.data(), pool);
          EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
              << "threads " << (pool ? pool->size() : 0);
        }
      }
    }
  });
}

TEST(AttnRes, SoftmaxOverBlocksAndPartialSum) {
  const size_t hidden = 4;
  // Two block states and the partial sum, one token.
  const std::vector<float> b0 = {1, 0, 0, 0}, b1 = {0, 2, 0, 0}, p = {1, 1, 1, 1};
  const std::vector<float> norm = {1.0f, 0.5f, 2.0f, 1.0f};
  const std::vector<float> proj_f = {0.5f, 1.0f, -1.0f, 0.25f};
  std::vector<uint16_t> proj;
  for (float v : proj_f) proj.push_back(kernels::f32_to_bf16(v));  // exact in BF16
  std::vector<float> out(hidden);
  const float eps = 1e-5f;
  kernels::attn_res_mix({b0.data(), b1.data()}, p.data(), 1, hidden, proj.data(), norm.data(), eps, out.data());
  // By hand: k_v = v / sqrt(mean(v^2) + eps); score = sum(k_v * norm * proj).
  auto score = [&](const std::vector<float>& v) {
    double ms = 0;
    for (float x : v) ms += double(x) * x;
    ms /= hidden;
    double s = 0;
    for (size_t c = 0; c < hidden; ++c) s += v[c] / std::sqrt(ms + eps) * norm[c] * proj_f[c];
    return s;
  };
  // b0: 1/sqrt(0.25)*0.5 = 1.0; b1: 2/sqrt(1)*0.5*1 = 1.0; p: 1*(0.5+0.5-2+0.25) = -0.75
  EXPECT_NEAR(score(b0), 1.0, 1e-4);
  EXPECT_NEAR(score(b1), 1.0, 1e-4);
  EXPECT_NEAR(score(p), -0.75, 1e-4);
  const double s[3] = {score(b0), score(b1), score(p)};
  const double m = std::max({s[0], s[1], s[2]});
  double e[3], sum = 0;
  for (int j = 0; j < 3; ++j) sum += e[j] = std::exp(s[j] - m);
  for (size_t c = 0; c < hidden; ++c) {
    const double want = (e[0] * b0[c] + e[1] * b1[c] + e[2] * p[c]) / sum;
    EXPECT_NEAR(out[c], want, 1e-6) << c;
  }
  // With no blocks the mix returns p itself (softmax over one value).
  kernels::attn_res_mix({}, p.data(), 1, hidden, proj.data(), norm.data(), eps, out.data());
  for (size_t c = 0; c < hidden; ++c) EXPECT_EQ(out[c], p[c]);
}

TEST(AttnRes, RowsAreIndependent) {
  std::mt19937 rng(3);
  const size_t hidden = 32, n = 5;
  std::vector<float> b0 = test::random_input(rng, n * hidden), p = test::random_input(rng, n * hidden);
  test::RandomBf16 proj(rng, 1, hidden, 1.0);
  test::RandomF32 norm(rng, hidden, 1.0, 0.1);
  std::vector<float> all(n * hidden), one(hidden);
  kernels::attn_res_mix({b0.data()}, p.data(), n, hidden, proj.bits.data(), norm.f.data(), 1e-5f, all.data());
  for (size_t t = 0; t < n; ++t) {
    kernels::attn_res_mix({b0.data() + t * hidden}, p.data() + t * hidden, 1, hidden, proj.bits.data(), norm.f.data(),
                          1e-5f, one.data());
    EXPECT_EQ(std::memcmp(one.data(), all.data() + t * hidden, hidden * sizeof(float)), 0) << t;
  }
}

}  // namespace
}  // namespace k3
