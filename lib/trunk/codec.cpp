#include "trunk/codec.h"

#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_c_... advanced parameters are stable since zstd 1.4
#include <xxhash.h>
#include <zstd.h>

#include <cstring>

#include "common/error.h"

namespace k3 {

namespace {

// Stored block: an 8-byte header, then the payload.
//   [0] method: kRaw (payload = the bytes), kWhole (payload = one plane: all
//       bytes), kSplit (payload = exponent plane then sign+mantissa plane)
//   [1] first plane's coding, [2] second plane's coding: kPlaneRaw, kPlaneZstd
//   [3] zero
//   [4..7] stored bytes of the first plane, little endian
enum : uint8_t { kRaw = 0, kWhole = 1, kSplit = 2 };
enum : uint8_t { kPlaneRaw = 0, kPlaneZstd = 1 };
constexpr size_t kHeader = kTrunkBlockHeaderBytes;

void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

// BF16 bits s eeeeeeee mmmmmmm -> exponent byte, sign+mantissa byte.
void split_bf16(const uint8_t* src, size_t count, uint8_t* exponent, uint8_t* sign_mantissa) {
  for (size_t i = 0; i < count; ++i) {
    const uint16_t v = static_cast<uint16_t>(src[2 * i] | src[2 * i + 1] << 8);
    exponent[i] = static_cast<uint8_t>(v >> 7);
    sign_mantissa[i] = static_cast<uint8_t>((v >> 8 & 0x80) | (v & 0x7F));
  }
}

void join_bf16(const uint8_t* exponent, const uint8_t* sign_mantissa, size_t count, uint8_t* dst) {
  for (size_t i = 0; i < count; ++i) {
    const uint16_t v =
        static_cast<uint16_t>((sign_mantissa[i] & 0x80) << 8 | exponent[i] << 7 | (sign_mantissa[i] & 0x7F));
    dst[2 * i] = static_cast<uint8_t>(v);
    dst[2 * i + 1] = static_cast<uint8_t>(v >> 8);
  }
}

}  // namespace

struct TrunkBlockEncoder::Impl {
  ZSTD_CCtx* cctx = nullptr;
  std::vector<uint8_t> exponent, sign_mantissa, plane;
};

TrunkBlockEncoder::TrunkBlockEncoder() : impl_(new Impl) {
  impl_->cctx = ZSTD_createCCtx();
  if (!impl_->cctx) {
    delete impl_;
    throw Error(ExitCode::kResource, "zstd: cannot create a compression context (out of memory)");
  }
  // Literals (Huffman) do the work; the short matches zstd's default finds
  // in an exponent plane cost more in offsets than they save.
  ZSTD_CCtx_setParameter(impl_->cctx, ZSTD_c_compressionLevel, 1);
  ZSTD_CCtx_setParameter(impl_->cctx, ZSTD_c_strategy, ZSTD_fast);
  ZSTD_CCtx_setParameter(impl_->cctx, ZSTD_c_minMatch, 7);
  ZSTD_CCtx_setParameter(impl_->cctx, ZSTD_c_checksumFlag, 0);
  ZSTD_CCtx_setParameter(impl_->cctx, ZSTD_c_contentSizeFlag, 1);
}

TrunkBlockEncoder::~TrunkBlockEncoder() {
  ZSTD_freeCCtx(impl_->cctx);
  delete impl_;
}

void TrunkBlockEncoder::encode(const uint8_t* src, size_t n, bool bf16, std::vector<uint8_t>* out) {
  Impl& m = *impl_;
  // Appends one plane to `out` as zstd when that is smaller, else raw; returns its coding.
  auto put_plane = [&](const uint8_t* p, size_t len) -> uint8_t {
    m.plane.resize(ZSTD_compressBound(len));
    const size_t c = ZSTD_compress2(m.cctx, m.plane.data(), m.plane.size(), p, len);
    if (ZSTD_isError(c)) throw Error(ExitCode::kInternal, std::string("zstd: ") + ZSTD_getErrorName(c));
    if (c < len) {
      out->insert(out->end(), m.plane.begin(), m.plane.begin() + c);
      return kPlaneZstd;
    }
    out->insert(out->end(), p, p + len);
    return kPlaneRaw;
  };
  out->assign(kHeader, 0);
  if (bf16 && n % 2 == 0 && n >= 2) {
    const size_t count = n / 2;
    m.exponent.resize(count);
    m.sign_mantissa.resize(count);
    split_bf16(src, count, m.exponent.data(), m.sign_mantissa.data());
    (*out)[0] = kSplit;
    (*out)[1] = put_plane(m.exponent.data(), count);
    put32(out->data() + 4, static_cast<uint32_t>(out->size() - kHeader));
    (*out)[2] = put_plane(m.sign_mantissa.data(), count);
  } else {
    (*out)[0] = kWhole;
    (*out)[1] = put_plane(src, n);
    put32(out->data() + 4, static_cast<uint32_t>(out->size() - kHeader));
  }
  if (out->size() >= n + kHeader) {  // nothing gained: keep the bytes as they are
    out->assign(kHeader, 0);
    (*out)[0] = kRaw;
    put32(out->data() + 4, static_cast<uint32_t>(n));
    out->insert(out->end(), src, src + n);
  }
}

struct TrunkBlockDecoder::Impl {
  ZSTD_DCtx* dctx = nullptr;
  std::vector<uint8_t> exponent, sign_mantissa;
};

TrunkBlockDecoder::TrunkBlockDecoder() : impl_(new Impl) {
  impl_->dctx = ZSTD_createDCtx();
  if (!impl_->dctx) {
    delete impl_;
    throw Error(ExitCode::kResource, "zstd: cannot create a decompression context (out of memory)");
  }
}

TrunkBlockDecoder::~TrunkBlockDecoder() {
  ZSTD_freeDCtx(impl_->dctx);
  delete impl_;
}

std::string TrunkBlockDecoder::decode(const uint8_t* stored, size_t stored_size, uint8_t* dst, size_t n,
                                      uint64_t xxh3) {
  Impl& m = *impl_;
  if (stored_size < kHeader) return "block shorter than its header";
  const uint8_t method = stored[0];
  const uint32_t first = get32(stored + 4);
  const uint8_t* p = stored + kHeader;
  const size_t payload = stored_size - kHeader;
  // Decodes one plane of exactly `len` bytes into `to`.
  auto plane = [&](uint8_t coding, const uint8_t* from, size_t from_len, uint8_t* to, size_t len) -> std::string {
    if (coding == kPlaneRaw) {
      if (from_len != len)
        return "raw plane of " + std::to_string(from_len) + " bytes where " + std::to_string(len) + " belong";
      std::memcpy(to, from, len);
      return std::string();
    }
    if (coding != kPlaneZstd) return "unknown plane coding " + std::to_string(coding);
    const size_t got = ZSTD_decompressDCtx(m.dctx, to, len, from, from_len);
    if (ZSTD_isError(got)) return std::string("zstd: ") + ZSTD_getErrorName(got);
    if (got != len)
      return "plane decodes to " + std::to_string(got) + " bytes where " + std::to_string(len) + " belong";
    return std::string();
  };
  std::string err;
  if (method == kRaw) {
    if (first != n || payload != n) return "raw block of the wrong size";
    std::memcpy(dst, p, n);
  } else if (method == kWhole) {
    if (first != payload) return "block's plane size disagrees with its length";
    err = plane(stored[1], p, payload, dst, n);
  } else if (method == kSplit) {
    if (n % 2 || first > payload) return "split block of the wrong size";
    const size_t count = n / 2;
    if (m.exponent.size() < count) {
      m.exponent.resize(count);
      m.sign_mantissa.resize(count);
    }
    err = plane(stored[1], p, first, m.exponent.data(), count);
    // A raw sign+mantissa plane is joined straight from the stored bytes.
    const uint8_t* sm = p + first;
    if (err.empty() && stored[2] != kPlaneRaw) {
      err = plane(stored[2], p + first, payload - first, m.sign_mantissa.data(), count);
      sm = m.sign_mantissa.data();
    } else if (err.empty() && payload - first != count) {
      err = "raw sign+mantissa plane of the wrong size";
    }
    if (err.empty()) join_bf16(m.exponent.data(), sm, count, dst);
  } else {
    return "unknown block method " + std::to_string(method);
  }
  if (!err.empty()) return err;
  if (XXH3_64bits(dst, n) != xxh3) return "decoded bytes do not match the block's xxh3";
  return std::string();
}

}  // namespace k3
