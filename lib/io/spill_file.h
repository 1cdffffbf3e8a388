// A scratch file for state that does not fit in memory (the layer-major
// prefill's block states, model/prefill_chunk.h): written and read back at
// known offsets, sequentially, by the run that made it.
//
// It is created in `dir` under a random name no one can predict, exclusively
// (O_CREAT|O_EXCL|O_NOFOLLOW: a file or link planted at the name is never
// written through), and unlinked at once: only the open descriptor holds it,
// so it is gone when the run ends however it ends (exit, an error, a signal,
// a kill), and a failed write (a full disk) leaves nothing behind either.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace k3 {

class SpillFile {
 public:
  // Throws k3::Error(kIo) naming `dir` when the file cannot be made there.
  explicit SpillFile(const std::string& dir);
  SpillFile(const SpillFile&) = delete;
  SpillFile& operator=(const SpillFile&) = delete;
  ~SpillFile();

  // Both throw k3::Error(kIo) naming the directory and what failed (a full
  // disk: exit 5); a read past what was written is an error too.
  void write(uint64_t offset, const void* data, size_t n);
  void read(uint64_t offset, void* data, size_t n);

  const std::string& dir() const { return dir_; }
  uint64_t bytes_written() const { return written_; }
  uint64_t bytes_read() const { return read_; }

 private:
  std::string dir_;
  int fd_ = -1;
  uint64_t written_ = 0, read_ = 0;
};

}  // namespace k3
