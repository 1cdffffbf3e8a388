// A k3 float function against libm's, over every 251st float bit pattern
// (both signs, every exponent, subnormals): how many were compared, how many
// gave libm's bits, and the most ULPs apart any was.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace k3::test {

struct FloatSweep {
  size_t tested = 0, equal = 0;
  int64_t worst_ulps = 0;
};

// The float's place on the number line in ULPs (-0 and +0 the same place).
inline int64_t ordered_float(float v) {
  int32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b < 0 ? -static_cast<int64_t>(b & 0x7fffffff) : b;
}

// Compares got(x) with want(x) for every sampled x that in_range(x) accepts.
template <class InRange, class Want, class Got>
FloatSweep sweep_floats(InRange in_range, Want want, Got got) {
  FloatSweep s;
  for (uint64_t b = 0; b < 0x100000000ull; b += 251) {
    float x;
    const uint32_t bits = static_cast<uint32_t>(b);
    std::memcpy(&x, &bits, sizeof x);
    if (!in_range(x)) continue;
    const int64_t d = std::llabs(ordered_float(want(x)) - ordered_float(got(x)));
    s.worst_ulps = d > s.worst_ulps ? d : s.worst_ulps;
    s.equal += d == 0;
    ++s.tested;
  }
  return s;
}

}  // namespace k3::test
