#include "common/byte_format.h"

#include <cmath>
#include <cstdio>

namespace k3 {

std::string format_bytes(uint64_t b) {
  char buf[40];
  if (b >= 1000000000000ull) std::snprintf(buf, sizeof buf, "%.2f TB", b / 1e12);
  else if (b >= 1000000000ull) std::snprintf(buf, sizeof buf, "%.2f GB", b / 1e9);
  else if (b >= 1000000ull) std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
  else if (b >= 1000ull) std::snprintf(buf, sizeof buf, "%.1f kB", b / 1e3);
  else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

std::string format_bytes_of(double bytes) {
  // 2^64 and above do not convert; no byte figure k3 prints comes near.
  if (!std::isfinite(bytes) || bytes <= 0) return format_bytes(0);
  if (bytes >= 1.8e19) return format_bytes(UINT64_MAX);
  return format_bytes(static_cast<uint64_t>(std::llround(bytes)));
}

}  // namespace k3
