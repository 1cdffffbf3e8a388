// The weight sources of the matrix products: how block b of a weight row
// becomes kVecs float vectors, for F32, BF16 and MXFP4 weights.
//
// A fragment of kernels/matmul.cpp, included inside its per-target namespace
// once for each SIMD target (hence no include guard); it uses that file's
// vector types (DF, VF, kLanes) and prefetch distances (kPrefetchBytes,
// kBf16PrefetchBytes). tile() and the blocked tiles
// (matmul_blocked-inl.h) read weights only through these sources, so a
// source decides the values every FMA sees: the MXFP4 decoders below give
// exactly code * 2^(s-127), the scalar path's values, on every target.

// A row of a dense matrix, its last partial vector copied into a
// zero-padded buffer so that every load is a full vector.
template <typename T>
struct DenseRow {
  const T* w;
  HWY_ALIGN T tail[kLanes];
  void init(const T* W, size_t r, size_t cols) {
    w = W + r * cols;
    const size_t full = cols / kLanes * kLanes;
    std::fill(tail, tail + kLanes, T{0});
    std::copy(w + full, w + cols, tail);
  }
};

struct F32Source {
  static constexpr size_t kVecs = 1;
  const float* W;
  size_t cols;
  using Row = DenseRow<float>;
  void init_row(size_t r, Row* row) const { row->init(W, r, cols); }
  HWY_INLINE void decode(const Row& row, size_t b, VF* out) const { out[0] = hn::LoadU(DF(), row.w + b * kLanes); }
  HWY_INLINE void prefetch(const Row&, size_t) const {}
  HWY_INLINE void decode_tail(const Row& row, VF* out) const { out[0] = hn::Load(DF(), row.tail); }
};

struct Bf16Source {
  static constexpr size_t kVecs = 1;
  const uint16_t* W;
  size_t cols;
  using Row = DenseRow<uint16_t>;
  void init_row(size_t r, Row* row) const { row->init(W, r, cols); }
  static HWY_INLINE VF widen(const uint16_t* p) {
    // BF16 -> FP32 is a 16-bit left shift of the bit pattern.
    const hn::RebindToUnsigned<DF> du32;
    const hn::Rebind<uint16_t, DF> du16;
    return hn::BitCast(DF(), hn::ShiftLeft<16>(hn::PromoteTo(du32, hn::LoadU(du16, p))));
  }
  HWY_INLINE void decode(const Row& row, size_t b, VF* out) const { out[0] = widen(row.w + b * kLanes); }
  HWY_INLINE void decode_tail(const Row& row, VF* out) const { out[0] = widen(row.tail); }
  // tile() walks R rows side by side; at hidden sizes a row is a few KB, so
  // the hardware prefetcher keeps restarting at each tile's rows. One
  // prefetch per 64-byte line, kBf16PrefetchBytes ahead (past a short row's end:
  // the next tile's rows; a prefetch never faults). Not in the blocked path,
  // whose column blocks stay in cache (measured slower there).
  HWY_INLINE void prefetch(const Row& row, size_t b) const {
    if ((b * kLanes * sizeof(uint16_t)) % 64 == 0)
      hwy::Prefetch(row.w + b * kLanes + kBf16PrefetchBytes / sizeof(uint16_t));
  }
};

// One 32-column group per block. X is permuted (evens, then odds).
struct Mxfp4Source {
  static constexpr size_t kVecs = 32 / kLanes;
  const uint8_t* packed;
  const uint8_t* scales;
  size_t cols;
  const float* scale_of;       // 2^(s-127) for each byte s
  const float* half_scale_of;  // 2^(s-128)
  struct Row {
    const uint8_t* p;
    const uint8_t* s;
  };
  void init_row(size_t r, Row* row) const {
    row->p = packed + r * (cols / 2);
    row->s = scales + r * (cols / 32);
  }
  HWY_INLINE void prefetch(const Row& row, size_t g) const {
    // One prefetch per 64-byte line (4 groups of 16 packed bytes).
    if ((g & 3) == 0) hwy::Prefetch(row.p + g * 16 + kPrefetchBytes);
  }
  HWY_INLINE void decode(const Row& row, size_t g, VF* out) const {
#if HWY_TARGET != HWY_SCALAR
    if constexpr (kLanes == 16) {
      const DF d;
      // 16 float lanes hold the whole 16-entry code table: scale the table
      // (exact: powers of two) and look codes up with one permute each.
      const hn::RebindToUnsigned<DF> du32;
      const hn::Rebind<uint8_t, DF> du8;
      const VF table = hn::Mul(hn::Load(d, kMxfp4CodeValues), hn::Set(d, scale_of[row.s[g]]));
      const auto bytes = hn::PromoteTo(du32, hn::LoadU(du8, row.p + g * 16));
      const auto lo = hn::And(bytes, hn::Set(du32, 15u));
      const auto hi = hn::ShiftRight<4>(bytes);
      out[0] = hn::TableLookupLanes(table, hn::IndicesFromVec(d, lo));
      out[1] = hn::TableLookupLanes(table, hn::IndicesFromVec(d, hi));
      return;
    }
#endif
#if HWY_TARGET == HWY_AVX2
    decode_avx2(row, g, out);
#else
    decode_narrow(row, g, out);
#endif
  }

#if HWY_TARGET == HWY_AVX2
  // AVX2: the 8 magnitudes {0, 0.5, ..., 6} times the group scale (exact:
  // powers of two) are one vector, and vpermps looks 8 codes up at once,
  // reading only the low 3 bits of each index lane, so the byte needs no
  // masking. The sign is code bit 3; `code << 28` puts it at bit 31 but also
  // puts the magnitude bits at 28-30, so the table is stored with those bits
  // already xored in (`bias`): the one xor with `code << 28` removes
  // them again and sets the sign. Values are those of decode_narrow, except
  // that code 8 gives -0.0 instead of +0.0, which no FMA sum can tell apart:
  // an accumulator starts at +0.0 and x + (+-0.0) == x for every x except
  // -0.0, which a sum starting from +0.0 never reaches (and 0 * inf or NaN
  // gives the same NaN bits either way). ~4 instructions per 8 weights
  // instead of ~6 (shuffle, widen, convert, scale).
  HWY_INLINE void decode_avx2(const Row& row, size_t g, VF* out) const {
    const __m256 mags = _mm256_load_ps(kMxfp4CodeValues);
    const __m256 bias =
        _mm256_castsi256_ps(_mm256_setr_epi32(0, 1 << 28, 2 << 28, 3 << 28, 4 << 28, 5 << 28, 6 << 28, 7 << 28));
    const __m256 table = _mm256_xor_ps(_mm256_mul_ps(mags, _mm256_set1_ps(scale_of[row.s[g]])), bias);
    for (size_t h = 0; h < 2; ++h) {
      // Bytes 8h..8h+7: their low nibbles are vector h, their high ones h+2.
      const __m256i lo =
          _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row.p + g * 16 + h * 8)));
      const __m256i hi = _mm256_srli_epi32(lo, 4);
      out[h].raw = _mm256_xor_ps(_mm256_permutevar8x32_ps(table, lo), _mm256_castsi256_ps(_mm256_slli_epi32(lo, 28)));
      out[h + 2].raw =
          _mm256_xor_ps(_mm256_permutevar8x32_ps(table, hi), _mm256_castsi256_ps(_mm256_slli_epi32(hi, 28)));
    }
  }
#endif

  // Narrower targets: byte shuffle (16-entry int8 table of 2*E2M1) for all
  // 32 codes of the group, then widen to float and multiply by scale/2.
  HWY_INLINE void decode_narrow(const Row& row, size_t g, VF* out) const {
    const DF d;
    HWY_ALIGN int8_t codes[32];
#if HWY_TARGET == HWY_SCALAR
    const int8_t* twice = kMxfp4TwiceCodes.v;
    for (size_t i = 0; i < 16; ++i) {
      codes[i] = twice[row.p[g * 16 + i] & 15];
      codes[16 + i] = twice[row.p[g * 16 + i] >> 4];
    }
#else
    const hn::Full128<uint8_t> d8;
    const hn::Full128<int8_t> di8;
    const auto table = hn::Load(di8, kMxfp4TwiceCodes.v);
    const auto bytes = hn::LoadU(d8, row.p + g * 16);
    const auto lo = hn::BitCast(di8, hn::And(bytes, hn::Set(d8, uint8_t{15})));
    const auto hi = hn::BitCast(di8, hn::ShiftRight<4>(bytes));
    hn::Store(hn::TableLookupBytes(table, lo), di8, codes);
    hn::Store(hn::TableLookupBytes(table, hi), di8, codes + 16);
#endif
    const hn::Rebind<int8_t, DF> di8n;
    const hn::RebindToSigned<DF> di32;
    const VF half_scale = hn::Set(d, half_scale_of[row.s[g]]);
    for (size_t v = 0; v < kVecs; ++v) {
      const VF w = hn::ConvertTo(d, hn::PromoteTo(di32, hn::LoadU(di8n, codes + v * kLanes)));
      out[v] = hn::Mul(w, half_scale);
    }
  }
};
