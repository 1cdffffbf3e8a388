// Dense matrix products over a batch of tokens (prefill), blocked so that
// the activations are reused from L1/L2 rather than re-read from L3.
//
// A fragment of kernels/matmul.cpp, included inside its per-target namespace
// once for each SIMD target (hence no include guard); it uses that file's
// sources (Bf16Source, F32Source), TileShape and vector types.
//
// Why: tile() walks whole rows, so each R x T tile streams its T tokens'
// activations over all columns, and the next tile of rows streams them again:
// 256 tokens of a 12288-column matrix are 12.6 MB of FP32, read from L3 for
// every pair of weight rows. Here a block of kBlockRows weight rows is cut
// into column blocks of kBlockCols columns; for each column block, every
// token tile's slice of X (T x kBlockCols floats) stays in L1/L2 while all rows of the block pass over it, and the
// block's weights stay in L2 for all tokens of a token block. The tiles are 3 rows x 4 tokens: 12 accumulators, against
// tile()'s 8 on AVX2, keep both FMA units busy through the FMA latency (a 2 x 4 tile leaves them waiting);
// 6 x 4 on AVX-512 (see kTileRows).
//
// Bits: each output keeps its one vector accumulator from tile(). Between
// column blocks it is parked whole in `acc` (an exact FP32 store and load),
// so lane j still sums the products of its columns in increasing column
// order, with the same FMAs, starting from zero; the padded tail vector comes
// last, as in tile(); the lanes are reduced by the same SumOfLanes. So the
// result is bit-identical to tile()'s for every output, whichever of the two
// paths, tile sizes, blocks or threads computed it.

// Columns per column block, and rows and tokens per block: the weight block
// (120 KB of BF16), one token tile's X slice (32 KB) and the parked
// accumulators of a token block (60 KB on AVX2) fit L2. Measured on a Zen 3
// core at 12288 columns and 256 tokens: 256-column blocks (all in L1) ran
// 1.3-1.5x slower, as each call of tile_part then does too little work for
// its prologue; 1024-4096 columns were within the machine's noise.
constexpr size_t kBlockCols = 2048;
constexpr size_t kBlockVecs = kBlockCols / kLanes;
constexpr size_t kBlockRows = 30;
constexpr size_t kBlockTokens = 64;
// Tile: rows x tokens (kBlockRows is a multiple of kTileRows). AVX-512's 32
// registers hold a 6 x 4 tile (24 accumulators, 6 weight vectors, x): each
// x vector loaded serves 6 rows instead of 3, and each widened weight vector
// 4 tokens. One Zen 5 core, 64 tokens, interleaved, 3 rounds (GFLOP/s):
// 7168x7168 66-77 -> 128-142, 32768x7168 98-107 -> 124-144, 1536x1536
// 75-107 -> 98-104, 32768x1536 71-86 -> 89-104; 4 x 4 and 4 x 6 tiles and
// 1024-column blocks fell between. Narrower targets keep 3 x 4 (16 registers).
constexpr size_t kTileRows = kWide ? 6 : 3;
constexpr size_t kTileTokens = 4;
static_assert(kBlockRows % kTileRows == 0, "a row block is whole tiles");

// Batches of this many tokens or more take the blocked path; fewer take
// tile(), which reads their activations few enough times. Three tokens
// gain from the 3-row tiles (KDA q_proj and o_proj, one core, k3 alone:
// median 39-52 ms -> 29-40 ms); two do not (minimum 21-24 ms plain, 23-28
// ms blocked).
constexpr size_t kBlockMinTokens = 3;

// Per-thread parked accumulators, kBlockRows x kBlockTokens vectors.
std::vector<float>& acc_scratch() {
  thread_local std::vector<float> buf;
  return buf;
}

// Rows row[0..R) x tokens [0, T) of X over vector blocks [b0, b1), then the
// padded tail vector if `tail`, continuing the accumulators parked at acc
// (rows acc_stride floats apart, tokens kLanes apart).
template <size_t R, size_t T, class Source>
HWY_NOINLINE void tile_part(const Source& src, const typename Source::Row* row, const float* X, size_t xstride,
                            size_t b0, size_t b1, bool tail, float* acc, size_t acc_stride) {
  static_assert(Source::kVecs == 1, "dense sources only");
  const DF d;
  const float* x[T];
  for (size_t t = 0; t < T; ++t) x[t] = X + t * xstride;
  VF a[R][T];
  for (size_t r = 0; r < R; ++r)
    for (size_t t = 0; t < T; ++t) a[r][t] = hn::LoadU(d, acc + r * acc_stride + t * kLanes);
  for (size_t b = b0; b < b1; ++b) {
    VF w[R];
    for (size_t r = 0; r < R; ++r) src.decode(row[r], b, &w[r]);
    for (size_t t = 0; t < T; ++t) {
      const VF xv = hn::LoadU(d, x[t] + b * kLanes);
      for (size_t r = 0; r < R; ++r) a[r][t] = hn::MulAdd(w[r], xv, a[r][t]);
    }
  }
  if (tail) {
    for (size_t r = 0; r < R; ++r) {
      VF w;
      src.decode_tail(row[r], &w);
      for (size_t t = 0; t < T; ++t) a[r][t] = hn::MulAdd(w, hn::LoadU(d, x[t] + b1 * kLanes), a[r][t]);
    }
  }
  for (size_t r = 0; r < R; ++r)
    for (size_t t = 0; t < T; ++t) hn::StoreU(a[r][t], d, acc + r * acc_stride + t * kLanes);
}

// Token tile [t, t + T) of a column block against all nr rows of the row
// block: row tiles of kTileRows, then single rows.
template <size_t T, class Source>
void token_tile(const Source& src, const typename Source::Row* row, size_t nr, const float* X, size_t xstride, size_t t,
                size_t nt, size_t b0, size_t b1, bool tail, float* acc) {
  constexpr size_t kR = kTileRows;
  const size_t stride = nt * kLanes;
  const float* xt = X + t * xstride;
  float* a = acc + t * kLanes;
  size_t r = 0;
  for (; r + kR <= nr; r += kR) tile_part<kR, T>(src, row + r, xt, xstride, b0, b1, tail, a + r * stride, stride);
  // The last row block's rest: one half tile first where a half tile is more
  // than a row (3 of AVX-512's 6), then single rows.
  constexpr size_t kHalf = kR / 2;
  if constexpr (kHalf > 1) {
    if (r + kHalf <= nr) {
      tile_part<kHalf, T>(src, row + r, xt, xstride, b0, b1, tail, a + r * stride, stride);
      r += kHalf;
    }
  }
  for (; r < nr; ++r) tile_part<1, T>(src, row + r, xt, xstride, b0, b1, tail, a + r * stride, stride);
}

// One column block of a (row block, token block): token tiles of
// kTileTokens, 2, 1.
template <class Source>
void column_block(const Source& src, const typename Source::Row* row, size_t nr, const float* X, size_t xstride,
                  size_t nt, size_t b0, size_t b1, bool tail, float* acc) {
  constexpr size_t kT = kTileTokens;
  size_t t = 0;
  for (; t + kT <= nt; t += kT) token_tile<kT>(src, row, nr, X, xstride, t, nt, b0, b1, tail, acc);
  if constexpr (kT > 2) {
    for (; t + 2 <= nt; t += 2) token_tile<2>(src, row, nr, X, xstride, t, nt, b0, b1, tail, acc);
  }
  for (; t < nt; ++t) token_tile<1>(src, row, nr, X, xstride, t, nt, b0, b1, tail, acc);
}

// Rows [r_begin, r_end) for all n tokens (n >= kBlockMinTokens); X rows are
// xstride floats apart, blocks full vectors per row plus the tail if `tail`.
template <class Source>
void rows_range_blocked(const Source& src, size_t r_begin, size_t r_end, size_t rows, const float* X, size_t xstride,
                        size_t n, size_t blocks, bool tail, float* Y) {
  const DF d;
  std::vector<float>& acc = acc_scratch();
  acc.resize(kBlockRows * kBlockTokens * kLanes);
  typename Source::Row row[kBlockRows];
  for (size_t rb = r_begin; rb < r_end; rb += kBlockRows) {
    const size_t nr = std::min(kBlockRows, r_end - rb);
    for (size_t i = 0; i < nr; ++i) src.init_row(rb + i, &row[i]);
    for (size_t tb = 0; tb < n; tb += kBlockTokens) {
      const size_t nt = std::min(kBlockTokens, n - tb);
      std::fill(acc.begin(), acc.begin() + static_cast<std::ptrdiff_t>(nr * nt * kLanes), 0.0f);
      const float* xb = X + tb * xstride;
      // Column blocks; the last one (possibly empty of full vectors when
      // cols < kLanes) also takes the tail vector.
      for (size_t b0 = 0;; b0 += kBlockVecs) {
        const size_t b1 = std::min(blocks, b0 + kBlockVecs);
        const bool last = b1 == blocks;
        column_block(src, row, nr, xb, xstride, nt, b0, b1, last && tail, acc.data());
        if (last) break;
      }
      for (size_t r = 0; r < nr; ++r) {
        for (size_t t = 0; t < nt; ++t) {
          const VF a = hn::LoadU(d, acc.data() + (r * nt + t) * kLanes);
          Y[(tb + t) * rows + rb + r] = hn::GetLane(hn::SumOfLanes(d, a));
        }
      }
    }
  }
}
