#include "tokenizer/utf8.h"

namespace k3::utf8 {

Sequence classify(const uint8_t* p, size_t avail) {
  uint8_t b = p[0];
  if (b < 0x80) return {Sequence::kValid, 1};
  // Well-formed sequences (Unicode Table 3-7): the lead byte fixes the length
  // and the allowed range of the second byte; later bytes are 80..BF.
  size_t need;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    need = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    need = 3;
    if (b == 0xE0) lo = 0xA0;  // no overlongs
    if (b == 0xED) hi = 0x9F;  // no surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    need = 4;
    if (b == 0xF0) lo = 0x90;  // no overlongs
    if (b == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return {Sequence::kInvalid, 1};  // 80..C1, F5..FF start nothing
  }
  for (size_t i = 1; i < need; ++i) {
    if (i >= avail) return {Sequence::kIncomplete, static_cast<uint8_t>(i)};
    uint8_t c = p[i];
    if (i == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) return {Sequence::kInvalid, static_cast<uint8_t>(i)};
  }
  return {Sequence::kValid, static_cast<uint8_t>(need)};
}

size_t find_invalid(std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  size_t n = s.size(), i = 0;
  while (i < n) {
    // ASCII runs are by far the most common: skip 8 bytes at a time.
    while (i + 8 <= n) {
      uint64_t w;
      __builtin_memcpy(&w, p + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    Sequence q = classify(p + i, n - i);
    if (q.kind != Sequence::kValid) return i;
    i += q.length;
  }
  return kNotFound;
}

void append_replacing_invalid(std::string_view s, std::string& out) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  size_t n = s.size(), i = 0, run = 0;  // [run, i) is valid and not yet copied
  while (i < n) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    Sequence q = classify(p + i, n - i);
    if (q.kind == Sequence::kValid) {
      i += q.length;
      continue;
    }
    out.append(s.data() + run, i - run);
    out.append(kReplacement, 3);
    i += q.length;
    run = i;
  }
  out.append(s.data() + run, n - run);
}

std::string replace_invalid(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  append_replacing_invalid(s, out);
  return out;
}

}  // namespace k3::utf8
