#include "sampling/sample_rng.h"

#include "common/error.h"

namespace k3 {

SampleRng::SampleRng(uint64_t seed) : seed_(seed), engine_(seed) {}

uint64_t SampleRng::raw_at(int64_t position) {
  if (position < 0) throw Error(ExitCode::kInternal, "sampler: negative position");
  if (position < next_) {
    engine_.seed(seed_);
    next_ = 0;
  }
  engine_.discard(static_cast<unsigned long long>(position - next_));
  next_ = position + 1;
  return engine_();
}

double SampleRng::uniform_at(int64_t position) { return unit_double_from_bits(raw_at(position)); }

double unit_double_from_bits(uint64_t x) { return static_cast<double>(x >> 11) * 0x1.0p-53; }

}  // namespace k3
