// The random numbers the sampler draws, identical on every machine.
//
// Algorithm (this is the contract; tests re-derive it independently):
//   - the generator is std::mt19937_64 seeded with the 64-bit --seed; the C++
//     standard fixes its seeding and its output sequence x_0, x_1, x_2, ...
//   - the token that will occupy position p of the sequence (p = number of
//     tokens before it, prompt included, counting from 0) is drawn with
//     u_p = (x_p >> 11) * 2^-53, a double in [0, 1) with 53 random bits.
//   - outputs belonging to positions that were not sampled (prompt tokens,
//     greedy steps) are skipped, never reused.
// No std:: distribution is involved (their outputs are implementation-defined).
//
// Indexing by position rather than by "how many draws so far" makes a split
// run equal a single one: continuing a saved conversation needs only the
// seed, and a run that re-feeds the whole conversation as a prompt draws the
// same u for the same position.
#pragma once

#include <cstdint>
#include <random>

namespace k3 {

class SampleRng {
 public:
  explicit SampleRng(uint64_t seed);

  uint64_t seed() const { return seed_; }

  // u_p as defined above. Positions normally increase; asking for an earlier
  // one re-seeds and skips forward (O(p), ~1 ms per million positions).
  double uniform_at(int64_t position);

  // x_p itself (tests).
  uint64_t raw_at(int64_t position);

 private:
  uint64_t seed_;
  std::mt19937_64 engine_;
  int64_t next_ = 0;  // index of the output engine_ yields next
};

// (x >> 11) * 2^-53.
double unit_double_from_bits(uint64_t x);

}  // namespace k3
