// Byte counts on screen, one convention for every tool: powers of 1000
// (kB = 1e3, MB = 1e6, GB = 1e9, TB = 1e12 bytes, as disks, the presets and
// the memory plan count), "B" below 1 kB. A figure in binary units is
// written only where it is named so ("MiB", "GiB") next to the thing that
// is binary (a cgroup limit a user wrote as 8G, a page size).
#pragma once

#include <cstdint>
#include <string>

namespace k3 {

// "512 B", "4.1 kB", "812.3 MB", "1.23 GB", "1.45 TB": one decimal below
// 1 GB, two from 1 GB.
std::string format_bytes(uint64_t bytes);

// The same for a figure computed in floating point (a rate in bytes per
// second, a forecast): rounded to whole bytes; negative or not finite is
// "0 B".
std::string format_bytes_of(double bytes);

}  // namespace k3
