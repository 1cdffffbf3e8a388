#include "doctor/decode_probe.h"

#include <xxhash.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "common/error.h"
#include "platform/thread_cpu_time.h"
#include "trunk/codec.h"

namespace k3::doctor {

DecodeProbe probe_decode(double seconds) {
  constexpr size_t kBlocks = 32;
  const size_t block = kTrunkBlockBytes, values = block / 2;
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<std::vector<uint8_t>> stored(kBlocks);
  std::vector<uint64_t> hashes(kBlocks);
  std::vector<uint8_t> raw(block), out(block);
  TrunkBlockEncoder enc;
  DecodeProbe p;
  uint64_t stored_total = 0;
  for (size_t b = 0; b < kBlocks; ++b) {
    for (size_t i = 0; i < values; ++i) {
      float f = normal(rng);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      const uint16_t v = static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
      std::memcpy(&raw[2 * i], &v, 2);
    }
    enc.encode(raw.data(), block, true, &stored[b]);
    hashes[b] = XXH3_64bits(raw.data(), block);
    stored_total += stored[b].size();
  }
  p.ratio = static_cast<double>(stored_total) / (kBlocks * block);
  TrunkBlockDecoder dec;
  const double t0 = thread_cpu_seconds();
  do {
    for (size_t b = 0; b < kBlocks; ++b) {
      const std::string err = dec.decode(stored[b].data(), stored[b].size(), out.data(), block, hashes[b]);
      if (!err.empty()) throw Error(ExitCode::kInternal, "decode probe: " + err);
      p.bytes_decoded += block;
    }
    p.cpu_seconds = thread_cpu_seconds() - t0;
  } while (p.cpu_seconds < seconds);
  p.bytes_per_s_per_core = p.cpu_seconds > 0 ? p.bytes_decoded / p.cpu_seconds : 0;
  return p;
}

}  // namespace k3::doctor
