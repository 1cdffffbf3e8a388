#include "tokenizer/stream_decoder.h"

#include <cstdint>

#include "tokenizer/utf8.h"

namespace k3 {

namespace {

// Appends the longest decidable prefix of p[0..n) to out (invalid subparts
// replaced) and returns how many bytes were consumed; the rest is a valid
// but incomplete sequence that later bytes may complete.
size_t emit_decidable(const uint8_t* p, size_t n, std::string& out) {
  size_t i = 0, run = 0;
  while (i < n) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    utf8::Sequence q = utf8::classify(p + i, n - i);
    if (q.kind == utf8::Sequence::kValid) {
      i += q.length;
      continue;
    }
    out.append(reinterpret_cast<const char*>(p) + run, i - run);
    if (q.kind == utf8::Sequence::kIncomplete) return i;
    out.append(utf8::kReplacement, 3);
    i += q.length;
    run = i;
  }
  out.append(reinterpret_cast<const char*>(p) + run, n - run);
  return n;
}

}  // namespace

void StreamDecoder::push(std::string_view bytes, std::string& out) {
  if (pending_.empty()) {
    size_t used = emit_decidable(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), out);
    pending_.assign(bytes.data() + used, bytes.size() - used);
    return;
  }
  // At most 3 bytes are pending; joining them with the new bytes keeps the
  // maximal-subpart boundaries identical to a whole-buffer decode.
  pending_.append(bytes);
  size_t used = emit_decidable(reinterpret_cast<const uint8_t*>(pending_.data()), pending_.size(), out);
  pending_.erase(0, used);
}

void StreamDecoder::finish(std::string& out) {
  if (!pending_.empty()) out.append(utf8::kReplacement, 3);
  pending_.clear();
}

}  // namespace k3
