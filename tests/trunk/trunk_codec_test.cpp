// The compressed trunk's block codec: every block decodes to exactly the
// bytes encoded (memcmp) whatever the values (random bits, Gaussian weights,
// NaN/Inf/denormal patterns, zeros, odd and short blocks, non-BF16 data),
// Gaussian weights shrink the way trained ones do, and a block whose stored
// bytes or hash were damaged is refused.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "trunk/codec.h"

using namespace k3;

namespace {

uint16_t to_bf16(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  b += 0x7FFFu + ((b >> 16) & 1u);
  return static_cast<uint16_t>(b >> 16);
}

std::vector<uint8_t> bytes_of(const std::vector<uint16_t>& v) {
  std::vector<uint8_t> b(v.size() * 2);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<uint8_t> gaussian_bf16(size_t count, float std, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, std);
  std::vector<uint16_t> v(count);
  for (auto& x : v) x = to_bf16(nd(rng));
  return bytes_of(v);
}

// Encodes and decodes `src`; returns the stored size.
size_t round_trip(const std::vector<uint8_t>& src, bool bf16) {
  TrunkBlockEncoder enc;
  TrunkBlockDecoder dec;
  std::vector<uint8_t> stored;
  enc.encode(src.data(), src.size(), bf16, &stored);
  std::vector<uint8_t> out(src.size() + 1, 0xAB);
  const std::string err =
      dec.decode(stored.data(), stored.size(), out.data(), src.size(), XXH3_64bits(src.data(), src.size()));
  EXPECT_EQ(err, "");
  if (!src.empty())
    EXPECT_EQ(std::memcmp(out.data(), src.data(), src.size()), 0);  // an empty vector's data() may be null
  EXPECT_EQ(out[src.size()], 0xAB) << "decoder wrote past the block";
  return stored.size();
}

}  // namespace

TEST(TrunkCodec, GaussianBf16RoundTripsAndShrinks) {
  const auto src = gaussian_bf16(kTrunkBlockBytes / 2, 0.02f, 1);
  const size_t stored = round_trip(src, true);
  // Exponent ~2.7 bits + 8 raw bits of sign and mantissa: ~67% of 16 bits.
  EXPECT_LT(stored, src.size() * 0.70);
  EXPECT_GT(stored, src.size() * 0.55);
}

TEST(TrunkCodec, RandomBitsRoundTripAndStayNearRaw) {
  std::mt19937_64 rng(2);
  std::vector<uint8_t> src(kTrunkBlockBytes);
  for (auto& b : src) b = static_cast<uint8_t>(rng());
  const size_t stored = round_trip(src, true);
  EXPECT_LE(stored, src.size() + 8);  // incompressible: kept raw behind the header
  EXPECT_EQ(round_trip(src, false), stored);
}

TEST(TrunkCodec, EdgeValuesRoundTrip) {
  // Every BF16 bit pattern (NaNs with payloads, +-Inf, +-0, denormals, the
  // largest and smallest normals) twice, in order and shuffled.
  std::vector<uint16_t> v;
  for (uint32_t i = 0; i < 65536; ++i) v.push_back(static_cast<uint16_t>(i));
  std::vector<uint16_t> shuffled = v;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(3));
  v.insert(v.end(), shuffled.begin(), shuffled.end());
  ASSERT_EQ(v.size() * 2, kTrunkBlockBytes);
  round_trip(bytes_of(v), true);
  // Gaussian weights sprinkled with NaN, Inf and denormals.
  std::vector<uint8_t> g = gaussian_bf16(kTrunkBlockBytes / 2, 0.02f, 4);
  const uint16_t specials[] = {0x7FC0, 0xFFC1, 0x7F80, 0xFF80, 0x0001, 0x807F, 0x8000, 0x0000, 0x7F7F, 0x0080};
  for (size_t i = 0; i < g.size() / 2; i += 97) std::memcpy(&g[2 * i], &specials[i % 10], 2);
  round_trip(g, true);
}

TEST(TrunkCodec, ZeroShortOddAndNonBf16BlocksRoundTrip) {
  std::vector<uint8_t> zeros(kTrunkBlockBytes, 0);
  EXPECT_LT(round_trip(zeros, true), 200u);
  // The last, partial block of a tensor; an odd length; a single value; empty.
  round_trip(gaussian_bf16(1234, 0.02f, 5), true);
  std::vector<uint8_t> odd = gaussian_bf16(100, 1.0f, 6);
  odd.pop_back();
  round_trip(odd, true);
  round_trip(gaussian_bf16(1, 0.5f, 7), true);
  round_trip(std::vector<uint8_t>(), true);
  // F32 norms near 1: whole-block zstd.
  std::vector<float> f(4096);
  std::mt19937_64 rng(8);
  std::normal_distribution<float> nd(1.0f, 0.1f);
  for (auto& x : f) x = nd(rng);
  std::vector<uint8_t> fb(f.size() * 4);
  std::memcpy(fb.data(), f.data(), fb.size());
  EXPECT_LT(round_trip(fb, false), fb.size());
}

TEST(TrunkCodec, DamagedBlockIsRefused) {
  const auto src = gaussian_bf16(kTrunkBlockBytes / 2, 0.02f, 9);
  const uint64_t h = XXH3_64bits(src.data(), src.size());
  TrunkBlockEncoder enc;
  TrunkBlockDecoder dec;
  std::vector<uint8_t> stored;
  enc.encode(src.data(), src.size(), true, &stored);
  std::vector<uint8_t> out(src.size());
  ASSERT_EQ(dec.decode(stored.data(), stored.size(), out.data(), out.size(), h), "");
  // One flipped bit anywhere: in the header, the entropy-coded exponents,
  // the raw sign+mantissa bytes. Each is refused (by zstd or by the hash).
  for (size_t pos : {size_t{0}, size_t{1}, size_t{5}, size_t{20}, stored.size() / 3, stored.size() - 1}) {
    std::vector<uint8_t> bad = stored;
    bad[pos] ^= 0x10;
    EXPECT_NE(dec.decode(bad.data(), bad.size(), out.data(), out.size(), h), "") << "flip at " << pos;
  }
  // Truncated, or decoded to another length, or checked against another hash.
  EXPECT_NE(dec.decode(stored.data(), stored.size() - 1, out.data(), out.size(), h), "");
  EXPECT_NE(dec.decode(stored.data(), 4, out.data(), out.size(), h), "");
  EXPECT_NE(dec.decode(stored.data(), stored.size(), out.data(), out.size() - 2, h), "");
  EXPECT_NE(dec.decode(stored.data(), stored.size(), out.data(), out.size(), h ^ 1), "");
  // The decoder is still usable after refusals.
  EXPECT_EQ(dec.decode(stored.data(), stored.size(), out.data(), out.size(), h), "");
  if (!src.empty())
    EXPECT_EQ(std::memcmp(out.data(), src.data(), src.size()), 0);  // an empty vector's data() may be null
}
