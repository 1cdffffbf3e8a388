// k3-serve's request framing (serve/request_framer.h): the bytes a
// connection sends, fed in pieces whose sizes come from the input's first
// bytes. Whatever the bytes: no crash, no request over the limits; the same
// requests (or the same refusal) for every way of cutting them into reads;
// and a request in the framer's canonical form frames again to itself.
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "serve/request_framer.h"

namespace {

using k3::serve::FramedRequest;
using k3::serve::FrameStatus;
using k3::serve::FramingLimits;
using k3::serve::RequestFramer;

constexpr FramingLimits kLimits{512, 16, 1024};

struct Outcome {
  std::vector<FramedRequest> requests;
  int refusal = 0;
};

Outcome frame(std::string_view bytes, const std::vector<size_t>& cuts) {
  RequestFramer f(kLimits);
  Outcome out;
  size_t at = 0, c = 0;
  while (at < bytes.size() && out.refusal == 0) {
    const size_t n = std::min(bytes.size() - at, cuts.empty() ? bytes.size() : 1 + cuts[c++ % cuts.size()]);
    f.append(bytes.data() + at, n);
    at += n;
    for (FrameStatus s; (s = f.parse()) != FrameStatus::kIncomplete;) {
      if (s == FrameStatus::kRefused) {
        out.refusal = f.refusal_status();
        if (f.refusal().empty()) std::abort();
        break;
      }
      out.requests.push_back(f.take());
      const FramedRequest& r = out.requests.back();
      if (r.body.size() > kLimits.max_body_bytes) std::abort();
      if (r.head.size() < 4 || r.head.compare(r.head.size() - 4, 4, "\r\n\r\n") != 0) std::abort();
    }
  }
  return out;
}

bool same(const Outcome& a, const Outcome& b) {
  if (a.refusal != b.refusal || a.requests.size() != b.requests.size()) return false;
  for (size_t i = 0; i < a.requests.size(); ++i)
    if (a.requests[i].head != b.requests[i].head || a.requests[i].body != b.requests[i].body ||
        a.requests[i].close != b.requests[i].close)
      return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  // The first byte: how many cut sizes follow (0..7), each one byte.
  const size_t ncuts = std::min<size_t>(data[0] & 7, size - 1);
  std::vector<size_t> cuts(data + 1, data + 1 + ncuts);
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1 + ncuts), size - 1 - ncuts);
  const Outcome whole = frame(bytes, {});
  if (!same(whole, frame(bytes, cuts)) || !same(whole, frame(bytes, {0}))) std::abort();
  for (const FramedRequest& r : whole.requests) {
    const Outcome again = frame(r.head + r.body, {});
    // The canonical form is a fixed point (a head that only fit before its
    // Content-Length line was added may now be refused as too long).
    if (again.refusal == 431) continue;
    if (again.refusal != 0 || again.requests.size() != 1 || again.requests[0].head != r.head ||
        again.requests[0].body != r.body)
      std::abort();
  }
  return 0;
}
