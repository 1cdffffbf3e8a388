// Counts NaN and infinite values in the floating-point tensors of a byte
// stream (a shard read front to back, or trunk.bin as k3-pack writes it).
//
// A damaged or badly exported checkpoint can hold NaN/Inf weights; the model
// then produces NaN logits. k3-pack and k3-fetch-verify verify --full feed
// the bytes they read anyway through this scan and report each tensor that
// holds such values, so no extra pass over the disk is needed. The scan
// looks at exponent bits only (BF16, F16, F32, F64): a few instructions a
// value, far below the cost of reading it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/dtype.h"

namespace k3 {

struct NonFiniteTensor {
  std::string name;
  uint64_t count = 0;          // values that are NaN or +-Inf
  uint64_t first_element = 0;  // index of the first one
};

class NonFiniteScan {
 public:
  struct Span {
    std::string name;
    DType dtype = DType::kBF16;
    uint64_t offset = 0;  // in the scanned stream
    uint64_t nbytes = 0;
  };
  // Spans of other dtypes are ignored; spans must not overlap.
  explicit NonFiniteScan(std::vector<Span> spans);

  // Bytes [offset, offset + n) of the stream. Calls may come in any order
  // and chunking, as long as no byte is fed twice; an element split across
  // two calls is still checked (split elements are kept until completed).
  void feed(uint64_t offset, const void* data, uint64_t n);

  // Tensors holding non-finite values, in stream order.
  std::vector<NonFiniteTensor> found() const;
  // "tensor 'x' holds 3 non-finite values (first at element 17)[; and N more tensors]", or "".
  std::string summary() const;

 private:
  struct State {
    Span span;
    uint64_t count = 0, first = 0;
    struct Split {
      uint64_t element;
      uint8_t bytes[8];
      unsigned have;  // bytes of the element seen so far
    };
    std::vector<Split> split;  // elements cut by a feed boundary, until complete
  };
  static void scan(State& s, uint64_t rel, const uint8_t* p, uint64_t n);
  static void check(State& s, uint64_t element, const uint8_t* bytes);
  std::vector<State> spans_;  // sorted by offset
};

}  // namespace k3
