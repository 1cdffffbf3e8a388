// Plain POSIX file access with errors that name the file.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/atomic_file_writer.h"
#include "common/error.h"

namespace k3 {

// An open file descriptor, closed on destruction.
class File {
 public:
  File() = default;
  // Opens for reading; throws k3::Error(kBadModel or kIo) naming `path`.
  static File open_read(const std::string& path, bool direct = false);
  File(File&& other) noexcept;
  File& operator=(File&& other) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  uint64_t size() const;  // current size (fstat)
  bool is_direct() const { return direct_; }

  // Reads exactly n bytes at offset, or throws naming the file and offset
  // (a short read means the file is shorter than its header promised).
  void pread_exact(void* dst, size_t n, uint64_t offset) const;

 private:
  int fd_ = -1;
  bool direct_ = false;
  std::string path_;
};

// open(path, flags) for reading a file whose size the caller trusts (shards,
// trunk.bin): -1 with errno when open fails; a FIFO, device or directory is
// refused with k3::Error(kBadModel) naming it, without blocking (a FIFO would
// wait for a writer forever).
int open_regular_for_read(const std::string& path, int flags);

// fstat of an open descriptor, or k3::Error(kIo) "<path>: cannot stat: ..."
// (File, DirectFile and read_text_file share it).
struct stat stat_open_file(int fd, const std::string& path);

// Writes exactly n bytes at offset, retrying short and interrupted writes,
// or throws k3::Error(kIo) naming `path` and the errno text (ENOSPC reads
// "No space left on device").
void pwrite_exact(int fd, const void* data, size_t n, uint64_t offset, const std::string& path);

// Most bytes a whole-file or whole-stream read takes into memory by default:
// far above any real config, index (K3's is ~50 MB), token-id list or prompt,
// far below what would exhaust an 8 GB machine (a link to /dev/zero, a FIFO
// fed forever).
inline constexpr uint64_t kMaxWholeReadBytes = 256ull << 20;

// Reads what is there, up to n bytes (0 at end of input), retrying
// interrupted reads, or throws k3::Error(kIo) "cannot read <what>: ...".
// For streams (stdin, pipes) that must be consumed as they arrive.
size_t read_some(int fd, void* buf, size_t n, const std::string& what);
// Writes all of `data` to a stream (stdout, a pipe), retrying short and
// interrupted writes, or throws k3::Error(kIo) "cannot write <what>: ...".
void write_all(int fd, std::string_view data, const std::string& what);
// Everything until end of input; more than max_bytes is k3::Error(kBadInput)
// "<what> holds more than ...".
std::string read_all(int fd, const std::string& what, uint64_t max_bytes = kMaxWholeReadBytes);

// A tool's input file argument: "-" is stdin; anything else is opened and
// read to its end, so pipes, FIFOs and <(...) give all their bytes (their
// size is not known up front). A missing path is kBadInput
// "<path>: <what> not found".
std::string read_input(const std::string& path, const std::string& what);

// The same argument convention for tools that consume input as it arrives:
// "-" is stdin (not closed), anything else is opened for reading.
class InputFd {
 public:
  static InputFd open(const std::string& path, const std::string& what);
  InputFd(InputFd&& o) noexcept : fd_(o.fd_), name_(std::move(o.name_)) { o.fd_ = -1; }
  InputFd(const InputFd&) = delete;
  InputFd& operator=(const InputFd&) = delete;
  ~InputFd();
  int fd() const { return fd_; }
  const std::string& name() const { return name_; }  // "stdin" or the path

 private:
  InputFd(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  int fd_;
  std::string name_;
};

// Whole-file helper for small files (configs, JSON, id lists): refuses what
// is not a regular file (a FIFO, a device, a link to /dev/zero) and files over
// max_bytes with k3::Error(`bad`) naming the path; a missing file is
// kBadModel "file not found".
std::string read_text_file(const std::string& path, uint64_t max_bytes = kMaxWholeReadBytes,
                           ExitCode bad = ExitCode::kBadModel);
bool file_exists(const std::string& path);
std::string path_join(const std::string& dir, const std::string& name);

// Writes `data` to `path` atomically: a temporary file in the same directory,
// fsync, then rename. A failure leaves any previous `path` untouched; what
// is already at `path` is treated as AtomicFileWriter says for `policy`.
void write_file_atomic(const std::string& path, const void* data, size_t n,
                       OutputPolicy policy = OutputPolicy::kRegularFile);

}  // namespace k3
