#include "common/atomic_file_writer.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "common/file.h"

namespace k3 {

namespace {

constexpr size_t kBufferBytes = 1 << 20;

std::string directory_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISFIFO(m)) return "a FIFO";
  return "not a regular file";
}

// Where `path` points: whether it is absent, a regular file to replace, or a
// stream to write through; anything else is refused.
enum class Existing { kAbsent, kRegular, kStream };

Existing classify(const std::string& path, OutputPolicy policy) {
  struct stat l;
  if (::lstat(path.c_str(), &l) != 0) {
    if (errno == ENOENT) {
      struct stat d;
      const std::string dir = directory_of(path);
      if (::stat(dir.c_str(), &d) != 0 || !S_ISDIR(d.st_mode))
        throw Error(ExitCode::kIo, path + ": cannot write there: directory " + dir + " does not exist");
      return Existing::kAbsent;
    }
    throw Error(ExitCode::kIo, path + ": cannot write there: " + std::strerror(errno));
  }
  if (S_ISREG(l.st_mode)) return Existing::kRegular;
  if (policy == OutputPolicy::kFileOrStream) {
    struct stat t;  // a link to a stream (/dev/stdout -> /proc/self/fd/1) is that stream
    if (::stat(path.c_str(), &t) == 0 && (S_ISCHR(t.st_mode) || S_ISFIFO(t.st_mode))) return Existing::kStream;
    if (S_ISLNK(l.st_mode))
      throw Error(ExitCode::kIo, path +
                                     ": is a symbolic link; k3 replaces output files whole and will not "
                                     "replace a link: give the path of the file itself");
    throw Error(ExitCode::kIo, path + ": is " + kind_of(l.st_mode) +
                                   "; give a file name (character devices and FIFOs are written through)");
  }
  throw Error(ExitCode::kIo, path + ": is " + kind_of(l.st_mode) +
                                 ", not a regular file; k3 will not replace it (move it away and run again)");
}

}  // namespace

bool check_output_path(const std::string& path, OutputPolicy policy) {
  if (path.empty()) throw Error(ExitCode::kIo, "an output path is empty");
  return classify(path, policy) == Existing::kStream;
}

std::string random_temp_name(const std::string& path) {
  uint64_t r = 0;
  if (::getrandom(&r, sizeof r, 0) != static_cast<ssize_t>(sizeof r))
    r ^= static_cast<uint64_t>(::getpid()) * 0x9E3779B97F4A7C15ull ^ reinterpret_cast<uintptr_t>(&r);
  static const char* kHex = "0123456789abcdef";
  std::string s = path + ".tmp.";
  for (int i = 60; i >= 0; i -= 4) s += kHex[(r >> i) & 15];
  return s;
}

StaleTemporaries remove_stale_temporaries(const std::string& path) {
  StaleTemporaries removed;
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string prefix = (slash == std::string::npos ? path : path.substr(slash + 1)) + ".tmp.";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return removed;
  const int dfd = ::dirfd(d);
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() != prefix.size() + 16 || name.compare(0, prefix.size(), prefix) != 0) continue;
    if (!std::all_of(name.begin() + static_cast<std::ptrdiff_t>(prefix.size()), name.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }))
      continue;
    const int fd = ::openat(dfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) continue;  // a link (ELOOP) or gone
    struct stat st {
    }, again{};
    const bool ours = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid();
    // A live writer holds the lock: its temporary is not stale.
    if (ours && ::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::fstatat(dfd, name.c_str(), &again, AT_SYMLINK_NOFOLLOW) == 0 &&
        again.st_dev == st.st_dev && again.st_ino == st.st_ino && ::unlinkat(dfd, name.c_str(), 0) == 0) {
      ++removed.files;
      removed.bytes += static_cast<uint64_t>(st.st_blocks) * 512;
    }
    ::close(fd);
  }
  ::closedir(d);
  return removed;
}

int create_exclusive(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(ExitCode::kIo,
                path + ": cannot create: " + std::strerror(errno) +
                    (errno == EEXIST ? " (something is already there; k3 will not write through it)" : ""));
  return fd;
}

void rename_over_regular(const std::string& from, const std::string& to) {
  struct stat l;
  if (::lstat(to.c_str(), &l) == 0 && !S_ISREG(l.st_mode))
    throw Error(ExitCode::kIo, to + ": is " + kind_of(l.st_mode) +
                                   ", not a regular file; k3 will not replace it (move it away and run again)");
  if (::rename(from.c_str(), to.c_str()) != 0)
    throw Error(ExitCode::kIo, to + ": cannot rename " + from + " into place: " + std::strerror(errno));
}

AtomicFileWriter::AtomicFileWriter(const std::string& path, OutputPolicy policy) : path_(path), buf_(kBufferBytes) {
  if (classify(path, policy) == Existing::kStream) {
    stream_ = true;
    fd_ = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd_ < 0) throw Error(ExitCode::kIo, path + ": cannot open for writing: " + std::strerror(errno));
    return;
  }
  // A random name cannot be planted in advance; O_EXCL|O_NOFOLLOW refuses
  // one that was anyway. A few tries cover an (astronomically rare) clash.
  for (int attempt = 0;; ++attempt) {
    tmp_ = random_temp_name(path);
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ >= 0) {
      // The lock says "in use" to remove_stale_temporaries in other runs; it
      // lives on a duplicate so closing fd_ at commit_to_temp keeps it.
      lock_fd_ = ::fcntl(fd_, F_DUPFD_CLOEXEC, 3);
      if (lock_fd_ >= 0) ::flock(lock_fd_, LOCK_EX | LOCK_NB);
      return;
    }
    if (errno != EEXIST || attempt >= 3)
      throw Error(ExitCode::kIo, path_ + ": cannot create " + tmp_ + ": " + std::strerror(errno));
  }
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !stream_) ::unlink(tmp_.c_str());
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

void AtomicFileWriter::discard() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!stream_) ::unlink(tmp_.c_str());
}

void AtomicFileWriter::fail(const std::string& what, int err) {
  discard();
  throw Error(ExitCode::kIo, path_ + ": " + what + ": " + std::strerror(err));
}

// Every write goes through here so that a failed one (a full disk) removes
// the temporary before the error propagates.
void AtomicFileWriter::put(const void* data, size_t n, uint64_t offset) {
  try {
    if (!stream_) {
      pwrite_exact(fd_, data, n, offset, path_);
      return;
    }
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        throw Error(ExitCode::kIo, path_ + ": write failed: " + std::strerror(errno));
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
  } catch (const Error&) {
    discard();
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
  if (fd_ < 0 || committed_ || stream_)
    throw Error(ExitCode::kInternal, path_ + ": resize after commit or failure, or of a stream");
  flush();
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0)
    fail("cannot set the size to " + std::to_string(size) + " bytes", errno);
}

void AtomicFileWriter::write_at(uint64_t offset, const void* data, size_t n) {
  if (fd_ < 0 || committed_ || stream_)
    throw Error(ExitCode::kInternal, path_ + ": positional write after commit or failure, or to a stream");
  flush();
  put(data, n, offset);
}

void AtomicFileWriter::finish_writing() {
  if (fd_ < 0 || committed_) throw Error(ExitCode::kInternal, path_ + ": commit after commit or failure");
  flush();
  if (!stream_ && ::fsync(fd_) != 0) fail("fsync failed", errno);
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    int e = errno;
    discard();
    throw Error(ExitCode::kIo, path_ + ": write failed: " + std::strerror(e));
  }
}

void AtomicFileWriter::commit_to_temp() {
  if (stream_) throw Error(ExitCode::kInternal, path_ + ": a stream has no temporary");
  finish_writing();
}

void AtomicFileWriter::commit() {
  finish_writing();
  if (!stream_) {
    try {
      rename_over_regular(tmp_, path_);
    } catch (const Error&) {
      discard();
      throw;
    }
  }
  committed_ = true;
}

}  // namespace k3
