// A scratch file for state that does not fit in memory (the layer-major
// prefill's block states, model/prefill_chunk.h; the sequences' layer states
// lent to a chunk, model/state_loan.h): written and read back at known
// offsets, sequentially, by the run that made it.
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
  // `stem` starts the file's name and `purpose` names it in every error
  // ("<dir>: <purpose>: ...").
  explicit SpillFile(const std::string& dir, const std::string& stem = "k3-prefill-spill",
                     const std::string& purpose = "the prefill's spill file");
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
  std::string what() const;  // "<dir>: <purpose>"

  std::string dir_, purpose_;
  int fd_ = -1;
  uint64_t written_ = 0, read_ = 0;
};

}  // namespace k3
