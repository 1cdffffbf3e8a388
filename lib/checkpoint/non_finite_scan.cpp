#include "checkpoint/non_finite_scan.h"

#include <algorithm>
#include <cstring>

namespace k3 {

namespace {
// Bytes per element for the dtypes that have NaN/Inf, 0 for the others.
unsigned float_size(DType t) {
  switch (t) {
    case DType::kBF16:
    case DType::kF16: return 2;
    case DType::kF32: return 4;
    case DType::kF64: return 8;
    default: return 0;
  }
}

// All exponent bits set: Inf or NaN. Little-endian element bytes.
bool non_finite(DType t, const uint8_t* b) {
  switch (t) {
    case DType::kBF16: return (b[1] & 0x7f) == 0x7f && (b[0] & 0x80) == 0x80;
    case DType::kF16: return (b[1] & 0x7c) == 0x7c;
    case DType::kF32: return (b[3] & 0x7f) == 0x7f && (b[2] & 0x80) == 0x80;
    case DType::kF64: return (b[7] & 0x7f) == 0x7f && (b[6] & 0xf0) == 0xf0;
    default: return false;
  }
}
}  // namespace

NonFiniteScan::NonFiniteScan(std::vector<Span> spans) {
  for (Span& s : spans)
    if (float_size(s.dtype) && s.nbytes) spans_.push_back(State{std::move(s), 0, 0, {}});
  std::sort(spans_.begin(), spans_.end(), [](const State& a, const State& b) { return a.span.offset < b.span.offset; });
}

void NonFiniteScan::check(State& s, uint64_t element, const uint8_t* bytes) {
  if (!non_finite(s.span.dtype, bytes)) return;
  if (s.count == 0 || element < s.first) s.first = element;
  ++s.count;
}

void NonFiniteScan::scan(State& s, uint64_t rel, const uint8_t* p, uint64_t n) {
  const unsigned e = float_size(s.span.dtype);
  // Bytes of an element begun or finished in another feed.
  auto add_split = [&](uint64_t element, unsigned at, const uint8_t* src, unsigned len) {
    auto it = std::find_if(s.split.begin(), s.split.end(), [&](const State::Split& x) { return x.element == element; });
    if (it == s.split.end()) {
      s.split.push_back(State::Split{element, {}, 0});
      it = s.split.end() - 1;
    }
    std::memcpy(it->bytes + at, src, len);
    it->have += len;
    if (it->have == e) {
      check(s, element, it->bytes);
      s.split.erase(it);
    }
  };
  if (rel % e) {
    const unsigned at = static_cast<unsigned>(rel % e);
    const unsigned len = static_cast<unsigned>(std::min<uint64_t>(e - at, n));
    add_split(rel / e, at, p, len);
    rel += len;
    p += len;
    n -= len;
  }
  const uint64_t whole = n / e;
  uint64_t element = rel / e;
  if (s.span.dtype == DType::kBF16) {
    // The common case, kept branch-light: count first, locate only if any.
    unsigned bad = 0;
    for (uint64_t i = 0; i < whole; ++i) bad += (p[2 * i + 1] & 0x7f) == 0x7f && (p[2 * i] & 0x80) == 0x80;
    if (bad)
      for (uint64_t i = 0; i < whole; ++i) check(s, element + i, p + 2 * i);
  } else {
    for (uint64_t i = 0; i < whole; ++i) check(s, element + i, p + e * i);
  }
  const uint64_t tail = n - whole * e;
  if (tail) add_split(element + whole, 0, p + whole * e, static_cast<unsigned>(tail));
}

void NonFiniteScan::feed(uint64_t offset, const void* data, uint64_t n) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  const uint64_t end = offset + n;
  // First span that ends after `offset`.
  auto it = std::upper_bound(spans_.begin(), spans_.end(), offset,
                             [](uint64_t o, const State& s) { return o < s.span.offset + s.span.nbytes; });
  for (; it != spans_.end() && it->span.offset < end; ++it) {
    const uint64_t b = std::max(offset, it->span.offset), e = std::min(end, it->span.offset + it->span.nbytes);
    if (b < e) scan(*it, b - it->span.offset, p + (b - offset), e - b);
  }
}

std::vector<NonFiniteTensor> NonFiniteScan::found() const {
  std::vector<NonFiniteTensor> out;
  for (const State& s : spans_)
    if (s.count) out.push_back(NonFiniteTensor{s.span.name, s.count, s.first});
  return out;
}

std::string NonFiniteScan::summary() const {
  const std::vector<NonFiniteTensor> f = found();
  if (f.empty()) return "";
  std::string o = "tensor '" + f[0].name + "' holds " + std::to_string(f[0].count) + " NaN or infinite value" +
                  (f[0].count == 1 ? "" : "s") + " (first at element " + std::to_string(f[0].first_element) + ")";
  if (f.size() > 1)
    o += " and " + std::to_string(f.size() - 1) + " more tensor" + (f.size() > 2 ? "s" : "") + " do too";
  return o;
}

}  // namespace k3
