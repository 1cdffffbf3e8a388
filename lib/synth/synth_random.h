// The synthetic checkpoint's random numbers: one generator for weights and
// the tokenizer, so every byte follows from the seed.
#pragma once

#include <cstdint>

namespace k3 {

// splitmix64: tiny, fast, and good enough to fill weights.
inline uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace k3
