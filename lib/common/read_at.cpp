#include "common/read_at.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace k3 {

ReadAtResult read_at(int fd, void* dst, uint64_t n, uint64_t offset, uint64_t stop_unaligned) {
  // One pread returns at most 0x7ffff000 bytes on Linux; ask for no more.
  constexpr uint64_t kMaxOne = 1u << 30;
  char* p = static_cast<char*>(dst);
  ReadAtResult r;
  while (r.bytes < n) {
    const ssize_t got = ::pread(fd, p + r.bytes, std::min(n - r.bytes, kMaxOne), static_cast<off_t>(offset + r.bytes));
    if (got < 0) {
      if (errno == EINTR) continue;
      r.error = errno;
      break;
    }
    if (got == 0) break;  // end of file
    r.bytes += static_cast<uint64_t>(got);
    if (stop_unaligned && r.bytes % stop_unaligned) break;
  }
  return r;
}

}  // namespace k3
