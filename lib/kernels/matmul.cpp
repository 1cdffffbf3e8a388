// SIMD matrix products (Highway, compiled once per x86 target and chosen at
// run time with HWY_DYNAMIC_DISPATCH).
//
// Shape of the computation, and why it keeps the determinism contract:
//  * Each output Y[t, r] has ONE vector accumulator. Lane j of it sums the
//    products of the columns that land in lane j, in increasing column order,
//    with FMA; the lanes are then reduced by SumOfLanes. That sequence depends
//    on cols and the target only.
//  * Speed comes from computing a tile of R rows x T tokens at once: R*T
//    independent FMA chains, and each weight vector loaded/decoded once per
//    tile and reused for T tokens. Tile sizes change only which accumulators
//    run side by side, never the sequence inside one, so any n, any token
//    grouping and any row partition (thread count) give the same bits.
//  * Column tails (BF16/F32 with cols % lanes != 0) go through a zero-padded
//    last vector; X is copied once per call into a padded layout.
//  * MXFP4: X is permuted once per call so that within each 32-column group
//    the even columns come first, then the odd ones. The low nibbles of a
//    group's 16 packed bytes then line up with the first 16 X values and the
//    high nibbles with the last 16, so no nibble interleaving is needed.
//    Decoded weights are exactly code * 2^(s-127), as in the scalar path.

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "common/error.h"
#include "common/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/mxfp4.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/matmul.cpp"
#include "hwy/cache_control.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

#ifndef K3_KERNELS_MATMUL_SHARED
#define K3_KERNELS_MATMUL_SHARED
namespace k3::kernels {
namespace {

// Rows per parallel_for chunk so that a chunk carries enough work to be worth
// waking a thread (about 256k weight-or-FMA units).
size_t row_grain(size_t cols, size_t n, size_t tile_rows) {
  const size_t work_per_row = cols * (2 + n);
  const size_t target = size_t{1} << 18;
  const size_t rows = std::max<size_t>(1, target / std::max<size_t>(1, work_per_row));
  return (rows + tile_rows - 1) / tile_rows;  // in tiles
}

// Per-thread scratch for the padded/permuted copy of X (reused across calls).
std::vector<float>& x_scratch() {
  thread_local std::vector<float> buf;
  return buf;
}

// 2^(s-128) for every scale byte: the MXFP4 SIMD paths that decode codes to
// the integers 2*E2M1 multiply by half the group scale. Entry 0 is 2^-128
// (subnormal), exact; products with the small integers 2*E2M1 are exact too.
struct HalfScaleTable {
  float v[256];
  HalfScaleTable() {
    for (int s = 0; s < 256; ++s) v[s] = mxfp4_scale_value(static_cast<uint8_t>(s)) * 0.5f;
  }
};
const HalfScaleTable& half_scales() {
  static const HalfScaleTable t;
  return t;
}
struct ScaleTable {
  float v[256];
  ScaleTable() {
    for (int s = 0; s < 256; ++s) v[s] = mxfp4_scale_value(static_cast<uint8_t>(s));
  }
};
const ScaleTable& scales_table() {
  static const ScaleTable t;
  return t;
}

}  // namespace
}  // namespace k3::kernels
#endif  // K3_KERNELS_MATMUL_SHARED

HWY_BEFORE_NAMESPACE();
namespace k3::kernels {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

constexpr size_t kLanes = hn::MaxLanes(DF());
// 32 vector registers on AVX-512, 16 on AVX2/SSE4: the tile must fit.
constexpr bool kWide = kLanes >= 16;

// MXFP4 rows are short (cols/2 bytes, ~1.8 KB at K3 sizes) and a tile walks
// R of them side by side, so the hardware prefetcher keeps restarting;
// software prefetch ~8 KB ahead (the rows of the next tile or two) measured
// faster from memory than 0, 1 KB or 4 KB.
constexpr size_t kPrefetchBytes = 8192;
// BF16 rows, one token: 16 KB ahead. One Zen 5 core (AVX-512), k3-bench-kernels,
// three interleaved rounds of 15 calls (GB/s of weights at 7168 and 1536
// columns): 8 KB 13.8-21.8, 16 KB 18.0-24.7; 8-row tiles did not add to it.
// The AVX2 code on the same core: 11.4-16.3 -> 15.5-16.3 (no AVX2-only
// machine was at hand to measure).
constexpr size_t kBf16PrefetchBytes = 16384;

// ---- Weight sources: decode block b of a row into kVecs float vectors. ----
#include "kernels/matmul_sources-inl.h"

template <class Source>
constexpr bool kHasColumnTail = !std::is_same_v<Source, Mxfp4Source>;

#if HWY_TARGET == HWY_AVX2
// One token of MXFP4 on AVX2, kMxOneTokenRows rows side by side. Each output
// has one accumulator and one FMA per 8 weights, so the 2-row tile<2, 1>
// keeps only 2 FMA chains in flight and waits on the FMA latency (4 group
// vectors in a row into the same accumulator). Decoding each vector just
// before its FMA (table per row and group, indices read again from the
// packed bytes) needs ~3 registers per row instead of 5, so 4 rows fit in
// AVX2's 16 registers: 4 chains. Every output sees the products and the
// decoded values of decode_avx2 in the same order (group by group, vectors
// 0..3: low nibbles of bytes 0-7, 8-15, then the high ones), so the bits are
// tile<2, 1>'s. One core, expert shapes 640x768 to 3584x3072, weights from
// memory, Release (-O3): 4.9-5.1 -> 5.1-5.3 GB/s in a tight loop, 1.14-1.17
// -> 1.10-1.12 ms per 3584x3072 matrix in k3-bench-kernels (3 runs each);
// at -O2, where GCC schedules tile<2, 1> worse, 3.6-3.9 -> 5.0-5.3. Six
// rows ran slower (4.2-4.6 GB/s), eight spill.
constexpr size_t kMxOneTokenRows = 4;

HWY_NOINLINE void tile_mxfp4_one_token(const Mxfp4Source& src, size_t r0, const float* x, size_t groups, float* Y) {
  constexpr size_t R = kMxOneTokenRows;
  const __m256 mags = _mm256_load_ps(kMxfp4CodeValues);
  const __m256 bias =
      _mm256_castsi256_ps(_mm256_setr_epi32(0, 1 << 28, 2 << 28, 3 << 28, 4 << 28, 5 << 28, 6 << 28, 7 << 28));
  Mxfp4Source::Row row[R];
  __m256 acc[R];
#pragma GCC unroll 8
  for (size_t r = 0; r < R; ++r) {
    src.init_row(r0 + r, &row[r]);
    acc[r] = _mm256_setzero_ps();
  }
  for (size_t g = 0; g < groups; ++g) {
    __m256 table[R];
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r) {
      src.prefetch(row[r], g);
      table[r] = _mm256_xor_ps(_mm256_mul_ps(mags, _mm256_set1_ps(src.scale_of[row[r].s[g]])), bias);
    }
#pragma GCC unroll 4
    for (size_t v = 0; v < 4; ++v) {
      const __m256 xv = _mm256_loadu_ps(x + g * 32 + v * 8);
#pragma GCC unroll 8
      for (size_t r = 0; r < R; ++r) {
        __m256i idx =
            _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row[r].p + g * 16 + (v & 1) * 8)));
        if (v >= 2) idx = _mm256_srli_epi32(idx, 4);
        const __m256 w =
            _mm256_xor_ps(_mm256_permutevar8x32_ps(table[r], idx), _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)));
        acc[r] = _mm256_fmadd_ps(w, xv, acc[r]);
      }
    }
  }
#pragma GCC unroll 8
  for (size_t r = 0; r < R; ++r) {
    VF a;
    a.raw = acc[r];
    Y[r0 + r] = hn::GetLane(hn::SumOfLanes(DF(), a));
  }
}
#endif

// ---- The tile: R rows x T tokens. ----
//
// X rows are xstride floats apart; blocks is the number of full blocks
// (kVecs vectors each); tail says whether one padded vector follows.
template <size_t R, size_t T, class Source>
HWY_NOINLINE void tile(const Source& src, size_t r0, size_t rows, const float* X, size_t xstride, size_t t0,
                       size_t blocks, bool tail, float* Y) {
  constexpr size_t kV = Source::kVecs;
  const DF d;
  typename Source::Row row[R];
  for (size_t r = 0; r < R; ++r) src.init_row(r0 + r, &row[r]);
  const float* x[T];
  for (size_t t = 0; t < T; ++t) x[t] = X + (t0 + t) * xstride;

  VF acc[R][T];
  for (size_t r = 0; r < R; ++r)
    for (size_t t = 0; t < T; ++t) acc[r][t] = hn::Zero(d);

  for (size_t b = 0; b < blocks; ++b) {
    VF w[R][kV];
    for (size_t r = 0; r < R; ++r) {
      src.prefetch(row[r], b);
      src.decode(row[r], b, w[r]);
    }
    for (size_t v = 0; v < kV; ++v) {
      const size_t off = (b * kV + v) * kLanes;
      for (size_t t = 0; t < T; ++t) {
        const VF xv = hn::LoadU(d, x[t] + off);
        for (size_t r = 0; r < R; ++r) acc[r][t] = hn::MulAdd(w[r][v], xv, acc[r][t]);
      }
    }
  }
  if constexpr (kHasColumnTail<Source>) {
    if (tail) {
      const size_t off = blocks * kV * kLanes;
      for (size_t r = 0; r < R; ++r) {
        VF w;
        src.decode_tail(row[r], &w);
        for (size_t t = 0; t < T; ++t) acc[r][t] = hn::MulAdd(w, hn::LoadU(d, x[t] + off), acc[r][t]);
      }
    }
  }
  for (size_t t = 0; t < T; ++t)
    for (size_t r = 0; r < R; ++r) Y[(t0 + t) * rows + r0 + r] = hn::GetLane(hn::SumOfLanes(d, acc[r][t]));
}

// Largest tile sizes that keep accumulators and decoded weights in registers.
// kRowT: on narrow targets an MXFP4 group decodes to 4 vectors at ~4-6
// instructions each, and a 2x2 tile (what 16 registers hold) pays one decode
// per 2 FMAs; one row by 8 tokens (4 weights + 8 accumulators + x) pays one
// per 8, so batches take single-row tiles of 8, then 4, then 3 tokens (0: not
// used; 4 then 2 on SSE4, whose 8 decoded vectors leave room for 4
// accumulators).
template <class Source>
struct TileShape {
  static constexpr size_t kR = kWide ? 4 : 2;
  static constexpr size_t kT = (kWide || Source::kVecs == 1) ? 4 : 2;
  static constexpr size_t kRowT = (kWide || Source::kVecs == 1) ? 0 : Source::kVecs <= 4 ? 8 : 4;
};

// Rows [r_begin, r_end) for all n tokens: rows in tiles of kR (then
// single rows); tokens in single-row groups of kRowT, kRowT/2 (and 3 when
// that is 4) when the source uses them, then blocks of kT, 2 and 1. Which tile computes an
// output never changes its bits.
template <class Source>
void rows_range(const Source& src, size_t r_begin, size_t r_end, size_t rows, const float* X, size_t xstride, size_t n,
                size_t blocks, bool tail, float* Y) {
  constexpr size_t kR = TileShape<Source>::kR, kT = TileShape<Source>::kT;
  constexpr size_t kRowT = TileShape<Source>::kRowT;
  // Single-row tiles of kRowT, then kRowT/2, tokens over rows [r, r + count).
  auto single_rows = [&](size_t r, size_t count, size_t& t) {
    if constexpr (kRowT > 0) {
      for (; t + kRowT <= n; t += kRowT) {
        for (size_t i = 0; i < count; ++i) {
          tile<1, kRowT>(src, r + i, rows, X, xstride, t, blocks, tail, Y);
        }
      }
      for (; t + kRowT / 2 <= n; t += kRowT / 2) {
        for (size_t i = 0; i < count; ++i) {
          tile<1, kRowT / 2>(src, r + i, rows, X, xstride, t, blocks, tail, Y);
        }
      }
      // Three tokens left: one single-row tile decodes each group once for
      // all three, where kR x 2 and kR x 1 tiles decoded it twice (3 tokens
      // of an expert matrix: 2.7 -> 2.3 ms of one core).
      if constexpr (kRowT / 2 == 4) {
        if (t + 3 <= n) {
          for (size_t i = 0; i < count; ++i) tile<1, 3>(src, r + i, rows, X, xstride, t, blocks, tail, Y);
          t += 3;
        }
      }
    }
  };
  size_t r = r_begin;
#if HWY_TARGET == HWY_AVX2
  if constexpr (std::is_same_v<Source, Mxfp4Source>) {
    if (n == 1) {  // the rest of the rows go through the tiles below
      for (; r + kMxOneTokenRows <= r_end; r += kMxOneTokenRows) tile_mxfp4_one_token(src, r, X, blocks, Y);
    }
  }
#endif
  for (; r + kR <= r_end; r += kR) {
    size_t t = 0;
    single_rows(r, kR, t);
    for (; t + kT <= n; t += kT) tile<kR, kT>(src, r, rows, X, xstride, t, blocks, tail, Y);
    if constexpr (kT > 2) {
      for (; t + 2 <= n; t += 2) tile<kR, 2>(src, r, rows, X, xstride, t, blocks, tail, Y);
    }
    for (; t < n; ++t) tile<kR, 1>(src, r, rows, X, xstride, t, blocks, tail, Y);
  }
  for (; r < r_end; ++r) {
    size_t t = 0;
    single_rows(r, 1, t);
    for (; t + kT <= n; t += kT) tile<1, kT>(src, r, rows, X, xstride, t, blocks, tail, Y);
    for (; t < n; ++t) tile<1, 1>(src, r, rows, X, xstride, t, blocks, tail, Y);
  }
}

#include "kernels/matmul_blocked-inl.h"

// Rows [r_begin, r_end) of the product, on the calling thread.
template <class Source>
void run_rows(const Source& src, size_t r_begin, size_t r_end, size_t rows, const float* X, size_t xstride, size_t n,
              size_t blocks, bool tail, float* Y) {
  if constexpr (kHasColumnTail<Source>) {  // the dense sources
    if (n >= kBlockMinTokens) {
      rows_range_blocked(src, r_begin, r_end, rows, X, xstride, n, blocks, tail, Y);
      return;
    }
  }
  rows_range(src, r_begin, r_end, rows, X, xstride, n, blocks, tail, Y);
}

template <class Source>
void run(const Source& src, size_t rows, const float* X, size_t xstride, size_t n, size_t blocks, bool tail, float* Y,
         ThreadPool* pool) {
  constexpr size_t kR = TileShape<Source>::kR;
  const size_t tiles = (rows + kR - 1) / kR;
  auto body = [&](size_t b, size_t e) {
    run_rows(src, b * kR, std::min(rows, e * kR), rows, X, xstride, n, blocks, tail, Y);
  };
  parallel_for(pool, tiles, row_grain(src.cols, n, kR), body);
}

// X with each row zero-padded to a whole number of vectors (only when needed).
const float* padded_x(const float* X, size_t cols, size_t n, size_t* xstride) {
  if (cols % kLanes == 0) {
    *xstride = cols;
    return X;
  }
  const size_t stride = (cols / kLanes + 1) * kLanes;
  std::vector<float>& buf = x_scratch();
  buf.assign(n * stride, 0.0f);
  for (size_t t = 0; t < n; ++t) std::copy(X + t * cols, X + (t + 1) * cols, &buf[t * stride]);
  *xstride = stride;
  return buf.data();
}

}  // namespace

void MatmulBf16(const uint16_t* W, size_t rows, size_t cols, const float* X, size_t n, float* Y, ThreadPool* pool) {
  size_t xstride;
  const float* xp = padded_x(X, cols, n, &xstride);
  const Bf16Source src{W, cols};
  run(src, rows, xp, xstride, n, cols / kLanes, cols % kLanes != 0, Y, pool);
}

void MatmulF32(const float* W, size_t rows, size_t cols, const float* X, size_t n, float* Y, ThreadPool* pool) {
  size_t xstride;
  const float* xp = padded_x(X, cols, n, &xstride);
  const F32Source src{W, cols};
  run(src, rows, xp, xstride, n, cols / kLanes, cols % kLanes != 0, Y, pool);
}

void MatmulBf16Rows(const uint16_t* W, size_t rows, size_t cols, const float* X, size_t n, float* Y, size_t r_begin,
                    size_t r_end) {
  size_t xstride;
  const float* xp = padded_x(X, cols, n, &xstride);
  const Bf16Source src{W, cols};
  run_rows(src, r_begin, r_end, rows, xp, xstride, n, cols / kLanes, cols % kLanes != 0, Y);
}

// Per 32-column group, the even columns of X, then the odd ones (see the top).
const float* permuted_x(const float* X, size_t cols, size_t n) {
  std::vector<float>& buf = x_scratch();
  buf.resize(n * cols);
  for (size_t t = 0; t < n; ++t) {
    const float* x = X + t * cols;
    float* o = &buf[t * cols];
    for (size_t g = 0; g < cols; g += 32) {
      for (size_t i = 0; i < 16; ++i) {
        o[g + i] = x[g + 2 * i];
        o[g + 16 + i] = x[g + 2 * i + 1];
      }
    }
  }
  return buf.data();
}

void MatmulMxfp4(const uint8_t* packed, const uint8_t* scales, size_t rows, size_t cols, const float* X, size_t n,
                 float* Y, ThreadPool* pool) {
  const Mxfp4Source src{packed, scales, cols, scales_table().v, half_scales().v};
  run(src, rows, permuted_x(X, cols, n), cols, n, cols / 32, false, Y, pool);
}

void MatmulMxfp4Rows(const uint8_t* packed, const uint8_t* scales, size_t rows, size_t cols, const float* X, size_t n,
                     float* Y, size_t r_begin, size_t r_end) {
  const Mxfp4Source src{packed, scales, cols, scales_table().v, half_scales().v};
  run_rows(src, r_begin, r_end, rows, permuted_x(X, cols, n), cols, n, cols / 32, false, Y);
}

int64_t CurrentTarget() { return HWY_TARGET; }
size_t CurrentLanes() { return kLanes; }

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace k3::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace k3::kernels {

HWY_EXPORT(MatmulBf16);
HWY_EXPORT(MatmulF32);
HWY_EXPORT(MatmulMxfp4);
HWY_EXPORT(MatmulBf16Rows);
HWY_EXPORT(MatmulMxfp4Rows);
HWY_EXPORT(CurrentTarget);
HWY_EXPORT(CurrentLanes);

void matmul_bf16(const uint16_t* W, size_t rows, size_t cols, const float* X, size_t n, float* Y, ThreadPool* pool) {
  if (rows == 0 || n == 0) return;
  HWY_DYNAMIC_DISPATCH(MatmulBf16)(W, rows, cols, X, n, Y, pool);
}

void matmul_mxfp4(const uint8_t* packed, const uint8_t* scales, size_t rows, size_t cols, const float* X, size_t n,
                  float* Y, ThreadPool* pool) {
  if (cols % kMxfp4Group != 0) {
    // The config reader guarantees this for real checkpoints; reaching here
    // means a caller bug, and reading on would run past the packed rows.
    throw Error(ExitCode::kInternal, "matmul_mxfp4: cols (" + std::to_string(cols) + ") is not a multiple of 32");
  }
  if (rows == 0 || n == 0) return;
  HWY_DYNAMIC_DISPATCH(MatmulMxfp4)(packed, scales, rows, cols, X, n, Y, pool);
}

void matmul_f32(const float* W, size_t rows, size_t cols, const float* X, size_t n, float* Y, ThreadPool* pool) {
  if (rows == 0 || n == 0) return;
  HWY_DYNAMIC_DISPATCH(MatmulF32)(W, rows, cols, X, n, Y, pool);
}

namespace {
void check_row_range(size_t rows, size_t r_begin, size_t r_end, const char* what) {
  if (r_begin > r_end || r_end > rows)
    throw Error(ExitCode::kInternal, std::string(what) + ": rows [" + std::to_string(r_begin) + ", " +
                                         std::to_string(r_end) + ") are not within the matrix's " +
                                         std::to_string(rows));
}
}  // namespace

void matmul_bf16_rows(const uint16_t* W, size_t rows, size_t cols, const float* X, size_t n, float* Y, size_t row_begin,
                      size_t row_end) {
  check_row_range(rows, row_begin, row_end, "matmul_bf16_rows");
  if (row_begin == row_end || n == 0) return;
  HWY_DYNAMIC_DISPATCH(MatmulBf16Rows)(W, rows, cols, X, n, Y, row_begin, row_end);
}

void matmul_mxfp4_rows(const uint8_t* packed, const uint8_t* scales, size_t rows, size_t cols, const float* X, size_t n,
                       float* Y, size_t row_begin, size_t row_end) {
  if (cols % kMxfp4Group != 0)
    throw Error(ExitCode::kInternal, "matmul_mxfp4_rows: cols (" + std::to_string(cols) + ") is not a multiple of 32");
  check_row_range(rows, row_begin, row_end, "matmul_mxfp4_rows");
  if (row_begin == row_end || n == 0) return;
  HWY_DYNAMIC_DISPATCH(MatmulMxfp4Rows)(packed, scales, rows, cols, X, n, Y, row_begin, row_end);
}

size_t matmul_row_grain(size_t cols, size_t n) { return row_grain(cols, n, 1); }

const char* kernel_target_name() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(CurrentTarget)()); }

size_t kernel_target_lanes() { return HWY_DYNAMIC_DISPATCH(CurrentLanes)(); }

}  // namespace k3::kernels
#endif  // HWY_ONCE
