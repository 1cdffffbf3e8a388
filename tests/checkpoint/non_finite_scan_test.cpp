// NonFiniteScan: NaN and +-Inf found in BF16/F16/F32/F64 tensors whatever
// the chunking of the stream (elements split across feeds included), other
// dtypes and finite extremes ignored, the first element and count exact.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "checkpoint/non_finite_scan.h"

using k3::DType;
using k3::NonFiniteScan;

namespace {
void put_f32(std::vector<uint8_t>& b, uint64_t at, float v) { std::memcpy(b.data() + at, &v, 4); }
void put_bf16(std::vector<uint8_t>& b, uint64_t at, float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  const uint16_t h = static_cast<uint16_t>(u >> 16);
  std::memcpy(b.data() + at, &h, 2);
}
}  // namespace

TEST(NonFiniteScan, FindsEveryKindInEveryChunking) {
  // Stream: [0,100) U8 full of 0xff (ignored), [100,300) BF16 x100,
  // [301,701) F32 x100 (odd start), [704,784) F64 x10, [800,820) F16 x10.
  std::vector<uint8_t> b(1000, 0);
  std::fill(b.begin(), b.begin() + 100, 0xff);
  for (int i = 0; i < 100; ++i) put_bf16(b, 100 + 2 * i, i % 2 ? 3.0e38f : -1.5f);  // finite extremes
  for (int i = 0; i < 100; ++i) put_f32(b, 301 + 4 * i, std::numeric_limits<float>::max());
  put_bf16(b, 100 + 2 * 37, std::numeric_limits<float>::quiet_NaN());
  put_bf16(b, 100 + 2 * 90, -std::numeric_limits<float>::infinity());
  put_f32(b, 301 + 4 * 64, std::numeric_limits<float>::infinity());
  const double nan64 = std::numeric_limits<double>::quiet_NaN();
  std::memcpy(b.data() + 704 + 8 * 3, &nan64, 8);
  const uint16_t h_inf = 0x7c00;
  std::memcpy(b.data() + 800 + 2 * 9, &h_inf, 2);
  const std::vector<NonFiniteScan::Span> spans = {{"u8", DType::kU8, 0, 100},
                                                  {"bf", DType::kBF16, 100, 200},
                                                  {"f32", DType::kF32, 301, 400},
                                                  {"f64", DType::kF64, 704, 80},
                                                  {"f16", DType::kF16, 800, 20}};
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    NonFiniteScan scan(spans);
    // Random cut points, fed in random order.
    std::vector<uint64_t> cuts = {0, b.size()};
    for (int k = 0; k < trial % 40; ++k) cuts.push_back(rng() % b.size());
    std::sort(cuts.begin(), cuts.end());
    std::vector<std::pair<uint64_t, uint64_t>> pieces;
    for (size_t k = 0; k + 1 < cuts.size(); ++k)
      if (cuts[k] < cuts[k + 1]) pieces.emplace_back(cuts[k], cuts[k + 1] - cuts[k]);
    std::shuffle(pieces.begin(), pieces.end(), rng);
    for (auto [o, n] : pieces) scan.feed(o, b.data() + o, n);
    const auto found = scan.found();
    ASSERT_EQ(found.size(), 4u) << "trial " << trial;
    EXPECT_EQ(found[0].name, "bf");
    EXPECT_EQ(found[0].count, 2u);
    EXPECT_EQ(found[0].first_element, 37u);
    EXPECT_EQ(found[1].name, "f32");
    EXPECT_EQ(found[1].count, 1u);
    EXPECT_EQ(found[1].first_element, 64u);
    EXPECT_EQ(found[2].name, "f64");
    EXPECT_EQ(found[2].first_element, 3u);
    EXPECT_EQ(found[3].name, "f16");
    EXPECT_EQ(found[3].first_element, 9u);
    EXPECT_NE(scan.summary().find("tensor 'bf' holds 2 NaN or infinite values (first at element 37) and 3 more"),
              std::string::npos)
        << scan.summary();
  }
}

TEST(NonFiniteScan, FiniteStreamIsClean) {
  std::vector<uint8_t> b(4096);
  for (size_t i = 0; i < b.size(); i += 2) put_bf16(b, i, static_cast<float>(i) - 2000.0f);
  NonFiniteScan scan({{"w", DType::kBF16, 0, b.size()}});
  scan.feed(0, b.data(), b.size());
  EXPECT_TRUE(scan.found().empty());
  EXPECT_EQ(scan.summary(), "");
}
