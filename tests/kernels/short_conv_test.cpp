// KDA's short conv (kernels/short_conv.h): the causal window on exact
// small values (taps and inputs chosen so every sum is exact in FP32), the
// carry across calls, and n tokens at once equal to the same tokens in
// pieces, and to the same call split over threads, byte for byte.
#include "kernels/short_conv.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/thread_pool.h"
#include "kernels/activations.h"
#include "kernels/bf16.h"

namespace k3::kernels {
namespace {

constexpr size_t K = 4, C = 3;

// Taps per channel, oldest first; exact in BF16.
const float kTaps[C][K] = {{0.25f, -2.0f, 0.5f, 1.0f}, {0, 0, 0, 1.0f}, {1.0f, 1.0f, 1.0f, 1.0f}};

std::vector<uint16_t> taps_bf16() {
  std::vector<uint16_t> w(C * K);
  for (size_t c = 0; c < C; ++c)
    for (size_t j = 0; j < K; ++j) w[c * K + j] = f32_to_bf16(kTaps[c][j]);
  return w;
}

float input(size_t t, size_t c) { return static_cast<float>(int(t * 3 + c) % 7 - 3); }

TEST(ShortConv, CausalWindowWithZeroHistory) {
  const size_t n = 6;
  const std::vector<uint16_t> w = taps_bf16();
  std::vector<float> carry((K - 1) * C, 0.0f), raw(n * C), next((K - 1) * C);
  for (size_t t = 0; t < n; ++t)
    for (size_t c = 0; c < C; ++c) raw[t * C + c] = input(t, c);
  short_conv_silu(w.data(), carry.data(), raw.data(), n, C, K, next.data());
  for (size_t t = 0; t < n; ++t) {
    for (size_t c = 0; c < C; ++c) {
      // Tap K-1 multiplies token t, tap 0 token t-3; before the start: zeros.
      float acc = 0;
      for (size_t j = 0; j < K; ++j) {
        const long s = long(t) + long(j) - long(K - 1);
        acc += kTaps[c][j] * (s < 0 ? 0.0f : input(size_t(s), c));
      }
      EXPECT_EQ(raw[t * C + c], silu(acc)) << "t " << t << " c " << c;
    }
  }
  // Channel 1 is the identity tap: silu(x) of its own input.
  EXPECT_EQ(raw[4 * C + 1], silu(input(4, 1)));
  // The carry holds the last K-1 raw inputs, oldest first.
  for (size_t r = 0; r < K - 1; ++r)
    for (size_t c = 0; c < C; ++c) EXPECT_EQ(carry[r * C + c], input(n - (K - 1) + r, c)) << r << " " << c;
}

TEST(ShortConv, PiecesEqualOneCallByteForByte) {
  const size_t n = 7;
  const std::vector<uint16_t> w = taps_bf16();
  std::vector<float> all(n * C), carry_all((K - 1) * C, 0.0f), next((K - 1) * C);
  for (size_t t = 0; t < n; ++t)
    for (size_t c = 0; c < C; ++c) all[t * C + c] = input(t, c) * 0.37f;
  std::vector<float> pieces = all, carry_p((K - 1) * C, 0.0f);
  short_conv_silu(w.data(), carry_all.data(), all.data(), n, C, K, next.data());
  size_t t0 = 0;
  for (size_t len : {1u, 2u, 4u}) {
    short_conv_silu(w.data(), carry_p.data(), pieces.data() + t0 * C, len, C, K, next.data());
    t0 += len;
  }
  ASSERT_EQ(t0, n);
  EXPECT_EQ(std::memcmp(all.data(), pieces.data(), all.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(carry_all.data(), carry_p.data(), carry_all.size() * sizeof(float)), 0);
}

// Channels split over threads (several chunks, uneven sizes) give every
// output and the carry exactly what the inline call gives.
TEST(ShortConv, ThreadsSplitChannelsByteForByte) {
  const size_t n = 40, channels = 1001;
  std::vector<uint16_t> w(channels * K);
  for (size_t i = 0; i < w.size(); ++i) w[i] = f32_to_bf16(static_cast<float>(int(i * 7 % 13) - 6) * 0.125f);
  std::vector<float> raw(n * channels), carry((K - 1) * channels), next((K - 1) * channels);
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<float>(int(i * 5 % 17) - 8) * 0.3f;
  for (size_t i = 0; i < carry.size(); ++i) carry[i] = static_cast<float>(int(i % 5) - 2) * 0.7f;
  std::vector<float> want = raw, want_carry = carry;
  short_conv_silu(w.data(), want_carry.data(), want.data(), n, channels, K, next.data());
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    std::vector<float> got = raw, got_carry = carry;
    short_conv_silu(w.data(), got_carry.data(), got.data(), n, channels, K, next.data(), &pool);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << threads;
    EXPECT_EQ(std::memcmp(got_carry.data(), want_carry.data(), want_carry.size() * sizeof(float)), 0) << threads;
  }
}

// The conv runs in place from the last row down; each output and the new
// carry equal the window over a separate copy of [carry rows, raw rows]
// (the form that kept that copy), with a carry of non-zero values and
// fewer, as many and more rows than the carry holds.
TEST(ShortConv, InPlaceEqualsWindowOverACopyByteForByte) {
  const size_t channels = 5;
  std::vector<uint16_t> w(channels * K);
  for (size_t i = 0; i < w.size(); ++i) w[i] = f32_to_bf16(static_cast<float>(int(i * 11 % 9) - 4) * 0.31f);
  for (size_t n : {1u, 2u, 3u, 4u, 9u}) {
    std::vector<float> raw(n * channels), carry((K - 1) * channels), next((K - 1) * channels);
    for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<float>(int(i * 7 % 19) - 9) * 0.173f;
    for (size_t i = 0; i < carry.size(); ++i) carry[i] = static_cast<float>(int(i * 3 % 11) - 5) * 0.41f;
    std::vector<float> ext(carry);
    ext.insert(ext.end(), raw.begin(), raw.end());
    std::vector<float> want(n * channels);
    for (size_t t = 0; t < n; ++t)
      for (size_t c = 0; c < channels; ++c) {
        float acc = 0;
        for (size_t j = 0; j < K; ++j) acc += bf16_to_f32(w[c * K + j]) * ext[(t + j) * channels + c];
        want[t * channels + c] = silu(acc);
      }
    short_conv_silu(w.data(), carry.data(), raw.data(), n, channels, K, next.data());
    EXPECT_EQ(std::memcmp(raw.data(), want.data(), want.size() * sizeof(float)), 0) << n << " rows";
    EXPECT_EQ(std::memcmp(carry.data(), ext.data() + n * channels, carry.size() * sizeof(float)), 0) << n << " rows";
  }
}

}  // namespace
}  // namespace k3::kernels
