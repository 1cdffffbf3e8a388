// A file opened for O_DIRECT reads, falling back to buffered reads (with one
// warning per file system) where the file system refuses O_DIRECT (tmpfs,
// some FUSE and overlay mounts).
//
// read_covering() fetches any byte range: it reads the 4096-aligned range
// that covers it into an aligned destination and says where the requested
// bytes start, so callers never care whether the file is direct or not.
#pragma once

#include <cstdint>
#include <string>

namespace k3 {

// The aligned read that covers [offset, offset + length).
struct CoveringRead {
  uint64_t offset = 0;  // aligned down
  uint64_t length = 0;  // aligned up
  uint64_t skip = 0;    // requested bytes start at dst + skip
};
CoveringRead covering_read(uint64_t offset, uint64_t length);

class DirectFile {
 public:
  DirectFile() = default;
  // Throws k3::Error(kBadModel when missing, kIo otherwise) naming the file.
  explicit DirectFile(const std::string& path, bool want_direct = true);
  DirectFile(DirectFile&& o) noexcept;
  DirectFile& operator=(DirectFile&& o) noexcept;
  DirectFile(const DirectFile&) = delete;
  DirectFile& operator=(const DirectFile&) = delete;
  ~DirectFile();

  const std::string& path() const { return path_; }
  bool is_direct() const { return direct_; }
  int fd() const { return fd_; }
  uint64_t size() const;  // current size (fstat), to notice files that shrink

  // Reads [offset, offset + length) (both aligned, dst aligned) and requires
  // at least `need` bytes (the rest may lie past the end of the file). Throws
  // k3::Error(kIo) naming the file, the offset and what happened.
  void read_aligned(void* dst, uint64_t offset, uint64_t length, uint64_t need) const;

 private:
  int fd_ = -1;
  bool direct_ = false;
  std::string path_;
};

// Called once per process the first time O_DIRECT is refused; the default
// prints one warning line to stderr. Tests may replace it.
void set_direct_fallback_warning(void (*warn)(const std::string& path, const std::string& why));

}  // namespace k3
