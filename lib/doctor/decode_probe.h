// How fast this CPU decodes a compressed trunk (k3-pack --compress): BF16
// blocks of Gaussian weights (the shape of trained ones) encoded with the
// trunk codec and decoded on one thread, timed by that thread's CPU time so
// other load on the machine does not count against it.
#pragma once

#include <cstdint>

namespace k3::doctor {

struct DecodeProbe {
  double bytes_per_s_per_core = 0;  // decoded BF16 bytes out per CPU second
  double ratio = 0;                 // stored / raw bytes of the probe's blocks
  uint64_t bytes_decoded = 0;
  double cpu_seconds = 0;
};

// Decodes ~`seconds` of CPU time worth of blocks (at least one pass over 8 MiB).
DecodeProbe probe_decode(double seconds);

}  // namespace k3::doctor
