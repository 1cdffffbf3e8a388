// The one pread loop: every positioned read in k3 (File, DirectFile,
// k3-doctor's bandwidth probe) goes through read_at, so a short read, an
// interrupted read and the end of the file are handled the same way
// everywhere. It lives in common/, the lowest layer that reads files.
#pragma once

#include <cstdint>

namespace k3 {

struct ReadAtResult {
  uint64_t bytes = 0;  // read into dst, from `offset` on
  int error = 0;       // errno of a failed read (bytes then says how far it got); 0 otherwise
};

// Reads `n` bytes of `fd` at `offset` into `dst`: retries a read the kernel
// interrupted (EINTR) and continues after a short one, until all `n` are
// read, the file ends (bytes < n, error 0) or a read fails. With
// `stop_unaligned` (an O_DIRECT alignment) it also stops as soon as the
// bytes read are not a multiple of it: O_DIRECT reads short only at the end
// of the file, and a follow-up read from there would be unaligned.
// Thread-safe (pread moves no file offset). Never throws.
ReadAtResult read_at(int fd, void* dst, uint64_t n, uint64_t offset, uint64_t stop_unaligned = 0);

}  // namespace k3
