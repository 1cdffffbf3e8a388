// What /proc/self/smaps says about madvise(MADV_HUGEPAGE): the bytes of the
// mappings flagged "hg" (asked for transparent huge pages), so a test can
// check that a buffer asked for them, whatever the system's THP mode.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace k3::test {

// Whether this kernel has transparent huge pages at all (else madvise
// refuses MADV_HUGEPAGE and no mapping is ever flagged).
inline bool kernel_has_thp() { return std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled"); }

// Bytes of the mappings flagged "hg" that lie within [begin, end) (all of
// them by default).
inline uint64_t madvised_huge_bytes(uintptr_t begin = 0, uintptr_t end = UINTPTR_MAX) {
  std::ifstream f("/proc/self/smaps");
  std::string line;
  uintptr_t lo = 0, hi = 0;
  uint64_t total = 0;
  while (std::getline(f, line)) {
    // A mapping's header: "lo-hi perms ..."; its last field: "VmFlags: rd wr ...".
    if (const size_t dash = line.find('-');
        dash != std::string::npos && line.find(' ') > dash && line.find_first_not_of("0123456789abcdef") == dash) {
      lo = std::stoull(line.substr(0, dash), nullptr, 16);
      hi = std::stoull(line.substr(dash + 1, line.find(' ') - dash - 1), nullptr, 16);
    } else if (line.rfind("VmFlags:", 0) == 0) {
      std::istringstream flags(line.substr(8));
      std::string flag;
      bool hg = false;
      while (flags >> flag) hg = hg || flag == "hg";
      if (hg && lo >= begin && hi <= end) total += hi - lo;
    }
  }
  return total;
}

}  // namespace k3::test
