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
#include <string>
#include <vector>

namespace k3 {

class AtomicFileWriter {
 public:
  // Creates the temporary file; throws k3::Error(kIo) naming `path`.
  explicit AtomicFileWriter(const std::string& path);
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();  // discards the temporary unless committed

  void write(const void* data, size_t n);
  void commit();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return tmp_; }

 private:
  void flush();
  void fail(const std::string& what, int err);

  std::string path_, tmp_;
  int fd_ = -1;
  std::vector<char> buf_;
  size_t used_ = 0;
  bool committed_ = false;
};

}  // namespace k3
