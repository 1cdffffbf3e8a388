// MLA's latent attention (kernels/attention_scores.h): exact cases (one
// position, equal scores, scores far above exp's range) and a
// double-precision transcription of the formula on random data.
#include "kernels/attention_scores.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace k3::kernels {
namespace {

constexpr size_t kKvl = 4, kRope = 2, kStride = kKvl + kRope;

TEST(LatentAttention, OnePositionReturnsItsLatent) {
  const float cache[kStride] = {1, -2, 3.5f, 0.25f, 7, 9};
  const float q_lat[kKvl] = {0.3f, 0.1f, -0.7f, 2}, q_rope[kRope] = {1, -1};
  float scores[1], ctx[kKvl];
  latent_attention(q_lat, q_rope, cache, 1, kStride, kKvl, kRope, 0.125f, scores, ctx);
  EXPECT_EQ(scores[0], 1.0f);  // exp(s - max) with s the max
  for (size_t r = 0; r < kKvl; ++r) EXPECT_EQ(ctx[r], cache[r]) << r;
}

TEST(LatentAttention, EqualScoresAverageAndLargeScoresDoNotOverflow) {
  // Position 1 matches position 0's score through its rope part instead.
  const float cache[2 * kStride] = {2, 0, 4, -6, /*rope*/ 0, 0, 0, 8, 2, 10, /*rope*/ 1, 0};
  // Scores: q_lat . c0 = 2 * 500 = 1000; q_lat . c1 + q_rope . r1 = 0 + 1000.
  const float q_lat[kKvl] = {500, 0, 0, 0}, q_rope[kRope] = {1000, 3};
  float scores[2], ctx[kKvl];
  latent_attention(q_lat, q_rope, cache, 2, kStride, kKvl, kRope, 1.0f, scores, ctx);
  for (size_t r = 0; r < kKvl; ++r) EXPECT_EQ(ctx[r], (cache[r] + cache[kStride + r]) / 2) << r;
  for (size_t r = 0; r < kKvl; ++r) EXPECT_TRUE(std::isfinite(ctx[r]));
}

TEST(LatentAttention, MatchesDoublePrecisionReference) {
  const size_t kvl = 32, rope = 8, stride = kvl + rope, npos = 37;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> cache(npos * stride), q_lat(kvl), q_rope(rope), scores(npos), ctx(kvl);
  for (float& v : cache) v = nd(rng);
  for (float& v : q_lat) v = nd(rng);
  for (float& v : q_rope) v = nd(rng);
  const float scale = 0.2f;
  latent_attention(q_lat.data(), q_rope.data(), cache.data(), npos, stride, kvl, rope, scale, scores.data(),
                   ctx.data());
  std::vector<double> s(npos);
  double mx = -INFINITY, sum = 0;
  for (size_t j = 0; j < npos; ++j) {
    double a = 0;
    for (size_t r = 0; r < kvl; ++r) a += double(q_lat[r]) * cache[j * stride + r];
    for (size_t r = 0; r < rope; ++r) a += double(q_rope[r]) * cache[j * stride + kvl + r];
    s[j] = a * scale;
    mx = std::max(mx, s[j]);
  }
  for (double& v : s) sum += (v = std::exp(v - mx));
  for (size_t r = 0; r < kvl; ++r) {
    double want = 0;
    for (size_t j = 0; j < npos; ++j) want += s[j] / sum * cache[j * stride + r];
    EXPECT_NEAR(ctx[r], want, 1e-5 * (1 + std::fabs(want))) << r;
  }
}

}  // namespace
}  // namespace k3::kernels
