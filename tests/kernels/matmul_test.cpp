// Matrix products: the dispatched (SIMD) paths against the scalar references
// and a double-precision loop, and the determinism contract of matmul.h
// (batched == one token at a time, any thread count) checked bit for bit.
#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "common/error.h"
#include "common/thread_pool.h"
#include "hwy/targets.h"
#include "kernels/bf16.h"
#include "kernels/mxfp4.h"
#include "lib/simd_targets.h"

namespace k3::kernels {
namespace {

struct Bf16Case {
  std::vector<uint16_t> w;
  std::vector<float> x;
};

std::vector<float> random_floats(std::mt19937& rng, size_t count, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(count);
  for (auto& f : v) f = d(rng);
  return v;
}

std::vector<uint16_t> random_bf16(std::mt19937& rng, size_t count) {
  std::vector<uint16_t> v(count);
  for (auto& b : v) b = f32_to_bf16(std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng));
  return v;
}

std::vector<uint8_t> random_bytes(std::mt19937& rng, size_t count, int lo, int hi) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<uint8_t> v(count);
  for (auto& b : v) b = static_cast<uint8_t>(d(rng));
  return v;
}

// Independent double-precision references (decode written out here again).
std::vector<double> ref_bf16(const std::vector<uint16_t>& w, size_t rows, size_t cols, const std::vector<float>& x,
                             size_t n, std::vector<double>* abs_sum) {
  std::vector<double> y(n * rows);
  abs_sum->assign(n * rows, 0.0);
  for (size_t t = 0; t < n; ++t) {
    for (size_t r = 0; r < rows; ++r) {
      double acc = 0, mag = 0;
      for (size_t c = 0; c < cols; ++c) {
        uint32_t u = static_cast<uint32_t>(w[r * cols + c]) << 16;
        float wf;
        std::memcpy(&wf, &u, 4);
        acc += static_cast<double>(wf) * x[t * cols + c];
        mag += std::fabs(static_cast<double>(wf) * x[t * cols + c]);
      }
      y[t * rows + r] = acc;
      (*abs_sum)[t * rows + r] = mag;
    }
  }
  return y;
}

std::vector<double> ref_mxfp4(const std::vector<uint8_t>& p, const std::vector<uint8_t>& s, size_t rows, size_t cols,
                              const std::vector<float>& x, size_t n, std::vector<double>* abs_sum) {
  static const double kE2M1[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  std::vector<double> y(n * rows);
  abs_sum->assign(n * rows, 0.0);
  for (size_t t = 0; t < n; ++t) {
    for (size_t r = 0; r < rows; ++r) {
      double acc = 0, mag = 0;
      for (size_t c = 0; c < cols; ++c) {
        const uint8_t byte = p[r * (cols / 2) + c / 2];
        const int code = (c % 2 == 0) ? (byte & 15) : (byte >> 4);
        const double v = ((code & 8) ? -1.0 : 1.0) * kE2M1[code & 7] *
                         std::ldexp(1.0, static_cast<int>(s[r * (cols / 32) + c / 32]) - 127);
        acc += v * x[t * cols + c];
        mag += std::fabs(v * x[t * cols + c]);
      }
      y[t * rows + r] = acc;
      (*abs_sum)[t * rows + r] = mag;
    }
  }
  return y;
}

// FP32 accumulation error is bounded by ~cols * eps * sum|terms|; the check
// uses a much tighter constant since errors mostly cancel.
void expect_close(const std::vector<float>& got, const std::vector<double>& want, const std::vector<double>& mag,
                  size_t cols, const char* what) {
  const double tol_factor = 4.0 * std::sqrt(static_cast<double>(cols)) * 6e-8;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol_factor * mag[i] + 1e-30) << what << " at " << i;
  }
}

// The SIMD kernel and its scalar reference each against the double loop, and
// against each other.
void expect_simd_and_scalar_close(const std::vector<float>& simd, const std::vector<float>& scalar,
                                  const std::vector<double>& want, const std::vector<double>& mag, size_t cols) {
  expect_close(simd, want, mag, cols, "simd vs double");
  expect_close(scalar, want, mag, cols, "scalar vs double");
  expect_close(simd, std::vector<double>(scalar.begin(), scalar.end()), mag, cols, "simd vs scalar");
}

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << what;
}

using test::for_each_target;

const size_t kRowsList[] = {1, 2, 3, 7, 16, 31, 67};
const size_t kBf16Cols[] = {1, 3, 8, 15, 16, 17, 33, 64, 100, 255, 513};
const size_t kMxfp4Cols[] = {32, 64, 96, 160, 512, 1056};

TEST(Matmul, TargetName) {
  const std::string name = kernel_target_name();
  EXPECT_FALSE(name.empty());
  std::printf("kernel target: %s; compiled and supported:", name.c_str());
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) std::printf(" %s", hwy::TargetName(target));
  std::printf("\n");
}

TEST(Matmul, Bf16MatchesReferences) {
  for_each_target([&] {
    std::mt19937 rng(1234);
    for (size_t rows : kRowsList) {
      for (size_t cols : kBf16Cols) {
        const size_t n = 3;
        auto w = random_bf16(rng, rows * cols);
        auto x = random_floats(rng, n * cols, -1.0f, 1.0f);
        std::vector<float> y(n * rows), ys(n * rows);
        matmul_bf16(w.data(), rows, cols, x.data(), n, y.data(), nullptr);
        matmul_bf16_scalar(w.data(), rows, cols, x.data(), n, ys.data());
        std::vector<double> mag;
        auto yd = ref_bf16(w, rows, cols, x, n, &mag);
        SCOPED_TRACE("rows=" + std::to_string(rows) + " cols=" + std::to_string(cols));
        expect_simd_and_scalar_close(y, ys, yd, mag, cols);
      }
    }
  });
}

TEST(Matmul, Mxfp4MatchesReferences) {
  for_each_target([&] {
    std::mt19937 rng(99);
    for (size_t rows : kRowsList) {
      for (size_t cols : kMxfp4Cols) {
        const size_t n = 3;
        auto p = random_bytes(rng, rows * cols / 2, 0, 255);
        auto s = random_bytes(rng, rows * cols / 32, 110, 135);
        auto x = random_floats(rng, n * cols, -1.0f, 1.0f);
        std::vector<float> y(n * rows), ys(n * rows);
        matmul_mxfp4(p.data(), s.data(), rows, cols, x.data(), n, y.data(), nullptr);
        matmul_mxfp4_scalar(p.data(), s.data(), rows, cols, x.data(), n, ys.data());
        std::vector<double> mag;
        auto yd = ref_mxfp4(p, s, rows, cols, x, n, &mag);
        SCOPED_TRACE("rows=" + std::to_string(rows) + " cols=" + std::to_string(cols));
        expect_simd_and_scalar_close(y, ys, yd, mag, cols);
      }
    }
  });
}

TEST(Matmul, Mxfp4ExtremeScalesAreExact) {
  for_each_target([&] {
    // Scale 0 (2^-127, subnormal) and 253 (2^126): one nonzero code per row
    // and x = 1 make the product exact, so the result must equal the literal.
    const size_t cols = 64;
    std::vector<uint8_t> p(2 * cols / 2, 0);
    p[0] = 0x01;              // row 0, column 0: 0.5
    p[cols / 2 + 17] = 0xd0;  // row 1, column 35: code 13 = -3
    const uint8_t s[4] = {0, 127, 127, 253};
    std::vector<float> x(cols, 1.0f), y(2);
    matmul_mxfp4(p.data(), s, 2, cols, x.data(), 1, y.data(), nullptr);
    EXPECT_EQ(y[0], 2.938735877055719e-39f);   // 0.5 * 2^-127 = 2^-128
    EXPECT_EQ(y[1], -2.5521177519070385e38f);  // -3 * 2^126
  });
}

// Per 32-column group, the MXFP4 path visits the even columns, then the odd
// ones (it permutes X that way). So it must do exactly the FMAs of the FP32
// kernel run on the dequantized weights with the columns in that order: lane
// j of every vector sees the same products in the same sequence, and the
// outputs must match bit for bit, on every target, for one token and for
// batches, on 1 and 2 threads. This pins each decoder's values (every code,
// sign and scale, subnormal scales included) and its lane order, where the
// reference tests above allow rounding slack.
TEST(Matmul, Mxfp4EqualsF32OnDequantizedWeightsBitForBit) {
  auto evens_then_odds = [](const float* in, size_t cols, float* out) {
    for (size_t g = 0; g < cols; g += 32) {
      for (size_t i = 0; i < 16; ++i) {
        out[g + i] = in[g + 2 * i];
        out[g + 16 + i] = in[g + 2 * i + 1];
      }
    }
  };
  for_each_target([&] {
    std::mt19937 rng(1357);
    ThreadPool two(2);
    const size_t shapes[][2] = {{1, 32}, {3, 96}, {7, 160}, {33, 64}, {70, 1056}};
    for (const auto& shape : shapes) {
      const size_t rows = shape[0], cols = shape[1];
      SCOPED_TRACE("rows=" + std::to_string(rows) + " cols=" + std::to_string(cols));
      auto p = random_bytes(rng, rows * cols / 2, 0, 255);
      auto s = random_bytes(rng, rows * cols / 32, 0, 180);  // 2^-127 (subnormal) .. 2^53
      std::vector<float> w(rows * cols), row(cols);
      for (size_t r = 0; r < rows; ++r) {
        dequantize_mxfp4_row(&p[r * cols / 2], &s[r * cols / 32], cols, row.data());
        evens_then_odds(row.data(), cols, &w[r * cols]);
      }
      for (size_t n : {1, 2, 3, 4, 5, 8, 9, 16, 17}) {
        SCOPED_TRACE("n=" + std::to_string(n));
        auto x = random_floats(rng, n * cols, -1.0f, 1.0f);
        std::vector<float> xp(n * cols), want(n * rows), got(n * rows), got2(n * rows);
        for (size_t t = 0; t < n; ++t) evens_then_odds(&x[t * cols], cols, &xp[t * cols]);
        matmul_f32(w.data(), rows, cols, xp.data(), n, want.data(), nullptr);
        matmul_mxfp4(p.data(), s.data(), rows, cols, x.data(), n, got.data(), nullptr);
        matmul_mxfp4(p.data(), s.data(), rows, cols, x.data(), n, got2.data(), &two);
        expect_same_bits(got, want, "mxfp4 vs f32 on the dequantized weights");
        expect_same_bits(got2, want, "mxfp4 on 2 threads vs f32 on the dequantized weights");
      }
    }
  });
}

TEST(Matmul, F32MatchesDouble) {
  for_each_target([&] {
    std::mt19937 rng(7);
    for (size_t rows : kRowsList) {
      for (size_t cols : kBf16Cols) {
        const size_t n = 2;
        auto w = random_floats(rng, rows * cols, -1.0f, 1.0f);
        auto x = random_floats(rng, n * cols, -1.0f, 1.0f);
        std::vector<float> y(n * rows);
        matmul_f32(w.data(), rows, cols, x.data(), n, y.data(), nullptr);
        std::vector<double> yd(n * rows), mag(n * rows);
        for (size_t t = 0; t < n; ++t)
          for (size_t r = 0; r < rows; ++r)
            for (size_t c = 0; c < cols; ++c) {
              const double term = static_cast<double>(w[r * cols + c]) * x[t * cols + c];
              yd[t * rows + r] += term;
              mag[t * rows + r] += std::fabs(term);
            }
        SCOPED_TRACE("rows=" + std::to_string(rows) + " cols=" + std::to_string(cols));
        expect_close(y, yd, mag, cols, "f32 vs double");
      }
    }
  });
}

// Batched result == each token alone, whatever the batch size and which
// other tokens share the call; and == for every thread count.
TEST(Matmul, BatchedAndThreadedAreBitIdentical) {
  for_each_target([&] {
    std::mt19937 rng(4321);
    ThreadPool pools[] = {ThreadPool(1), ThreadPool(2), ThreadPool(3), ThreadPool(4)};
    const size_t shapes[][2] = {{67, 100}, {33, 1056}, {300, 64}, {5, 7}, {1, 4096}};
    for (const auto& shape : shapes) {
      const size_t rows = shape[0], cols_bf16 = shape[1];
      const size_t cols_mx = (cols_bf16 + 31) / 32 * 32;
      const size_t n = 19;
      SCOPED_TRACE("rows=" + std::to_string(rows) + " cols=" + std::to_string(cols_bf16));
      auto w = random_bf16(rng, rows * cols_bf16);
      auto wf = random_floats(rng, rows * cols_bf16, -1.0f, 1.0f);
      auto p = random_bytes(rng, rows * cols_mx / 2, 0, 255);
      auto s = random_bytes(rng, rows * cols_mx / 32, 100, 140);
      auto x = random_floats(rng, n * cols_mx, -3.0f, 3.0f);

      auto run = [&](int kind, const float* xs, size_t nt, ThreadPool* pool) {
        std::vector<float> y(nt * rows);
        if (kind == 0) matmul_bf16(w.data(), rows, cols_bf16, xs, nt, y.data(), pool);
        if (kind == 1) matmul_mxfp4(p.data(), s.data(), rows, cols_mx, xs, nt, y.data(), pool);
        if (kind == 2) matmul_f32(wf.data(), rows, cols_bf16, xs, nt, y.data(), pool);
        return y;
      };
      for (int kind = 0; kind < 3; ++kind) {
        SCOPED_TRACE("kind=" + std::to_string(kind));
        const size_t cols = kind == 1 ? cols_mx : cols_bf16;
        // X rows are spaced cols apart for this kind.
        std::vector<float> xk(n * cols);
        for (size_t t = 0; t < n; ++t) std::memcpy(&xk[t * cols], &x[t * cols_mx], cols * sizeof(float));
        const auto batched = run(kind, xk.data(), n, nullptr);
        // One token at a time.
        std::vector<float> single(n * rows);
        for (size_t t = 0; t < n; ++t) {
          auto yt = run(kind, &xk[t * cols], 1, nullptr);
          std::memcpy(&single[t * rows], yt.data(), rows * sizeof(float));
        }
        // Reordered sub-batches: tokens 5..n-1 then 0..4 in two calls.
        std::vector<float> split(n * rows);
        {
          auto tail = run(kind, &xk[5 * cols], n - 5, nullptr);
          auto head = run(kind, xk.data(), 5, nullptr);
          std::memcpy(&split[5 * rows], tail.data(), tail.size() * sizeof(float));
          std::memcpy(split.data(), head.data(), head.size() * sizeof(float));
        }
        expect_same_bits(batched, single, "batched vs single");
        expect_same_bits(batched, split, "batched vs split batches");
        for (auto& pool : pools) {
          expect_same_bits(batched, run(kind, xk.data(), n, &pool), "threads");
          // Single token with threads too (decode).
          auto y1 = run(kind, xk.data(), 1, &pool);
          ASSERT_EQ(std::memcmp(y1.data(), single.data(), rows * sizeof(float)), 0)
              << "single token, threads=" << pool.size();
        }
      }
    }
  });
}

// Dense batches of kBlockMinTokens (3) tokens or more take the blocked path
// (matmul_blocked-inl.h), fewer take the plain tiles; a single token always
// takes the plain tiles. Every output of a batch must have the bits of the
// same token computed alone, for batch sizes around the tile (4), token
// block (64) and prefill (256) sizes, rows around the tile (3; 6 on AVX-512)
// and row-block (30) sizes, columns around the vector width and across column blocks
// (2048), odd ones included, and for 1 and 2 threads.
TEST(Matmul, BlockedBatchesMatchSingleTokensBitForBit) {
  for_each_target([&] {
    std::mt19937 rng(2468);
    ThreadPool two(2);
    const size_t shapes[][2] = {{1, 7}, {3, 257}, {33, 9}, {67, 129}, {70, 24}, {31, 4103}, {64, 40}, {38, 33}};
    const size_t ns[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 65, 255, 256, 257};
    for (const auto& shape : shapes) {
      const size_t rows = shape[0], cols = shape[1];
      // Wide rows span column blocks; 65 tokens span two token blocks (kept
      // short so the test stays quick).
      const size_t n_max = cols > 2048 ? 65 : 257;
      SCOPED_TRACE("rows=" + std::to_string(rows) + " cols=" + std::to_string(cols));
      auto w = random_bf16(rng, rows * cols);
      auto wf = random_floats(rng, rows * cols, -1.0f, 1.0f);
      auto x = random_floats(rng, n_max * cols, -3.0f, 3.0f);
      for (int kind = 0; kind < 2; ++kind) {
        SCOPED_TRACE(kind == 0 ? "bf16" : "f32");
        auto run = [&](const float* xs, size_t nt, ThreadPool* pool) {
          std::vector<float> y(nt * rows);
          if (kind == 0) matmul_bf16(w.data(), rows, cols, xs, nt, y.data(), pool);
          if (kind == 1) matmul_f32(wf.data(), rows, cols, xs, nt, y.data(), pool);
          return y;
        };
        std::vector<float> single(n_max * rows);
        for (size_t t = 0; t < n_max; ++t) {
          auto yt = run(&x[t * cols], 1, nullptr);
          std::memcpy(&single[t * rows], yt.data(), rows * sizeof(float));
        }
        for (size_t n : ns) {
          if (n > n_max) continue;
          SCOPED_TRACE("n=" + std::to_string(n));
          const std::vector<float> want(single.begin(), single.begin() + static_cast<std::ptrdiff_t>(n * rows));
          expect_same_bits(run(x.data(), n, nullptr), want, "batch vs single tokens");
          expect_same_bits(run(x.data(), n, &two), want, "batch on 2 threads vs single tokens");
        }
      }
    }
  });
}

// The shapes above are mostly too small to be split between threads (a
// chunk of rows carries ~256k units of work). On rows enough for a split,
// every output must still have its one-thread bits (one thread computes it
// whole) and none may be left out (outputs start as NaN).
TEST(Matmul, RowsSplitBetweenThreadsMatchOneThreadBitForBit) {
  for_each_target([&] {
    std::mt19937 rng(97531);
    ThreadPool pools[] = {ThreadPool(2), ThreadPool(3)};
    const size_t shapes[][2] = {{4099, 96}, {1001, 352}};
    for (const auto& shape : shapes) {
      const size_t rows = shape[0], cols_mx = shape[1], cols = cols_mx - 5;  // dense: a column tail
      SCOPED_TRACE("rows=" + std::to_string(rows) + " cols=" + std::to_string(cols));
      auto w = random_bf16(rng, rows * cols);
      auto wf = random_floats(rng, rows * cols, -1.0f, 1.0f);
      auto p = random_bytes(rng, rows * cols_mx / 2, 0, 255);
      auto s = random_bytes(rng, rows * cols_mx / 32, 110, 135);
      for (size_t n : {1, 3, 4, 17}) {
        SCOPED_TRACE("n=" + std::to_string(n));
        auto x = random_floats(rng, n * cols_mx, -1.0f, 1.0f);
        for (int kind = 0; kind < 3; ++kind) {
          auto run = [&](ThreadPool* pool) {
            std::vector<float> y(n * rows, std::nanf(""));
            if (kind == 0) matmul_bf16(w.data(), rows, cols, x.data(), n, y.data(), pool);
            if (kind == 1) matmul_mxfp4(p.data(), s.data(), rows, cols_mx, x.data(), n, y.data(), pool);
            if (kind == 2) matmul_f32(wf.data(), rows, cols, x.data(), n, y.data(), pool);
            return y;
          };
          SCOPED_TRACE("kind=" + std::to_string(kind));
          const auto want = run(nullptr);
          for (auto& pool : pools) expect_same_bits(run(&pool), want, "threads vs one thread");
        }
      }
    }
  });
}

// matmul_*_rows: any split of the rows into ranges, each computed on its own,
// gives the whole product bit for bit (odd range starts and lengths, so the
// ranges cut through every tile shape), writes those rows only, and refuses
// a range past the matrix.
TEST(Matmul, RowRangesEqualTheWholeProductBitForBit) {
  for_each_target([&] {
    std::mt19937 rng(2468);
    const size_t shapes[][2] = {{67, 100}, {33, 1056}, {13, 64}};
    for (const auto& shape : shapes) {
      const size_t rows = shape[0], cols_bf16 = shape[1], cols_mx = (cols_bf16 + 31) / 32 * 32;
      SCOPED_TRACE("rows=" + std::to_string(rows) + " cols=" + std::to_string(cols_bf16));
      auto w = random_bf16(rng, rows * cols_bf16);
      auto p = random_bytes(rng, rows * cols_mx / 2, 0, 255);
      auto s = random_bytes(rng, rows * cols_mx / 32, 100, 140);
      for (size_t n : {1, 2, 3, 5, 19}) {
        SCOPED_TRACE("n=" + std::to_string(n));
        auto x = random_floats(rng, n * cols_mx, -3.0f, 3.0f);
        for (int kind = 0; kind < 2; ++kind) {
          SCOPED_TRACE("kind=" + std::to_string(kind));
          std::vector<float> want(n * rows), got(n * rows, std::nanf(""));
          if (kind == 0) matmul_bf16(w.data(), rows, cols_bf16, x.data(), n, want.data(), nullptr);
          else matmul_mxfp4(p.data(), s.data(), rows, cols_mx, x.data(), n, want.data(), nullptr);
          for (size_t b = 0; b < rows;) {
            const size_t e = std::min(rows, b + 1 + rng() % 11);
            if (kind == 0) matmul_bf16_rows(w.data(), rows, cols_bf16, x.data(), n, got.data(), b, e);
            else matmul_mxfp4_rows(p.data(), s.data(), rows, cols_mx, x.data(), n, got.data(), b, e);
            // Rows past e are not written yet.
            if (e < rows) {
              for (size_t t = 0; t < n; ++t) EXPECT_TRUE(std::isnan(got[t * rows + e]));
            }
            b = e;
          }
          expect_same_bits(got, want, "row ranges vs the whole product");
        }
      }
      std::vector<float> y(rows);
      std::vector<float> x(cols_mx);
      EXPECT_THROW(matmul_bf16_rows(w.data(), rows, cols_bf16, x.data(), 1, y.data(), 0, rows + 1), Error);
      EXPECT_THROW(matmul_mxfp4_rows(p.data(), s.data(), rows, cols_mx, x.data(), 1, y.data(), 2, 1), Error);
    }
  });
}

}  // namespace
}  // namespace k3::kernels
