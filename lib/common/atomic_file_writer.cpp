#include "common/atomic_file_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "common/file.h"

namespace k3 {

namespace {
constexpr size_t kBufferBytes = 1 << 20;
}

AtomicFileWriter::AtomicFileWriter(const std::string& path, const std::string& temp_path)
    : path_(path), tmp_(temp_path.empty() ? path + ".tmp." + std::to_string(::getpid()) : temp_path),
      buf_(kBufferBytes) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw Error(ExitCode::kIo, path_ + ": cannot create " + tmp_ + ": " + std::strerror(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFileWriter::fail(const std::string& what, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
  throw Error(ExitCode::kIo, path_ + ": " + what + ": " + std::strerror(err));
}

// Every write goes through here so that a failed one (a full disk) removes
// the temporary before the error propagates.
void AtomicFileWriter::put(const void* data, size_t n, uint64_t offset) {
  try {
    pwrite_exact(fd_, data, n, offset, path_);
  } catch (const Error&) {
    ::close(fd_);
    fd_ = -1;
    ::unlink(tmp_.c_str());
    throw;
  }
}

void AtomicFileWriter::flush() {
  put(buf_.data(), used_, written_);
  written_ += used_;
  used_ = 0;
}

void AtomicFileWriter::write(const void* data, size_t n) {
  if (fd_ < 0 || committed_) throw Error(ExitCode::kInternal, path_ + ": write after commit or failure");
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    size_t take = std::min(n, buf_.size() - used_);
    std::memcpy(buf_.data() + used_, p, take);
    used_ += take;
    p += take;
    n -= take;
    if (used_ == buf_.size()) flush();
  }
}

void AtomicFileWriter::resize(uint64_t size) {
  if (fd_ < 0 || committed_) throw Error(ExitCode::kInternal, path_ + ": resize after commit or failure");
  flush();
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0)
    fail("cannot set the size to " + std::to_string(size) + " bytes", errno);
}

void AtomicFileWriter::write_at(uint64_t offset, const void* data, size_t n) {
  if (fd_ < 0 || committed_) throw Error(ExitCode::kInternal, path_ + ": write after commit or failure");
  flush();
  put(data, n, offset);
}

void AtomicFileWriter::commit() {
  if (fd_ < 0 || committed_) throw Error(ExitCode::kInternal, path_ + ": commit after commit or failure");
  flush();
  if (::fsync(fd_) != 0) fail("fsync failed", errno);
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp_.c_str());
    throw Error(ExitCode::kIo, path_ + ": write failed: " + std::strerror(e));
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp_.c_str());
    throw Error(ExitCode::kIo, path_ + ": cannot rename " + tmp_ + " into place: " + std::strerror(e));
  }
  committed_ = true;
}

}  // namespace k3
