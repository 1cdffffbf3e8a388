#include "common/atomic_file_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace k3 {

namespace {
constexpr size_t kBufferBytes = 1 << 20;
}

AtomicFileWriter::AtomicFileWriter(const std::string& path)
    : path_(path), tmp_(path + ".tmp." + std::to_string(::getpid())), buf_(kBufferBytes) {
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

void AtomicFileWriter::flush() {
  size_t done = 0;
  while (done < used_) {
    ssize_t w = ::write(fd_, buf_.data() + done, used_ - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("write failed", errno);
    }
    done += static_cast<size_t>(w);
  }
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
