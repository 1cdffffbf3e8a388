// A file written as a stream and published atomically.
//
// Bytes go to a temporary file next to `path`; commit() fsyncs it and renames
// it over `path`. If commit() is never reached (an error, an exception, a
// signal that ends the process), the temporary is removed and any previous
// `path` is untouched: readers see the old file or the complete new one.
// For outputs too large to build in memory first (state files of long
// contexts); small outputs can use write_file_atomic().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace k3 {

class AtomicFileWriter {
 public:
  // Creates the temporary file (`temp_path`, or `path`.tmp.<pid> when
  // empty); throws k3::Error(kIo) naming `path`.
  explicit AtomicFileWriter(const std::string& path, const std::string& temp_path = "");
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();  // discards the temporary unless committed

  // Appends at the end of what write() has written so far.
  void write(const void* data, size_t n);
  // For files filled out of order: sets the size (extending leaves holes)
  // and writes at an absolute offset. Both flush write()'s buffer first.
  void resize(uint64_t size);
  void write_at(uint64_t offset, const void* data, size_t n);
  // fsync, then rename over `path`.
  void commit();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return tmp_; }

 private:
  void flush();
  void put(const void* data, size_t n, uint64_t offset);
  void fail(const std::string& what, int err);

  std::string path_, tmp_;
  int fd_ = -1;
  std::vector<char> buf_;
  size_t used_ = 0;
  uint64_t written_ = 0;  // bytes already in the temporary file
  bool committed_ = false;
};

}  // namespace k3
