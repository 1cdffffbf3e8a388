// Bounds for counts and sizes given on the command line: beyond them a flag
// is a usage error naming the valid range, never an abort or a crawl.
//
// Plain constants (no CLI11) so that any layer can size or check against them;
// lib/cli turns them into flag checks.
#pragma once

#include <cstdint>

namespace k3 {

inline constexpr int kMaxComputeThreads = 1024;             // --threads
inline constexpr int kMaxIoThreads = 256;                   // --io-threads, parallel reads in flight
inline constexpr int kMaxTransferJobs = 64;                 // --jobs, parallel downloads
inline constexpr double kMaxGigabytes = 1e6;                // --trunk-gb, --cache-gb
inline constexpr uint64_t kMaxContext = uint64_t{1} << 40;  // --ctx positions
// --seed of every tool and the API's "seed": one range everywhere, so a run
// of any tool can be repeated through any other (JSON integers end at 2^63-1).
// Outside it a seed is refused, never wrapped or saturated.
inline constexpr uint64_t kMaxSeed = uint64_t{INT64_MAX};

}  // namespace k3
