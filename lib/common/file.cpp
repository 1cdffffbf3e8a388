#include "common/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/atomic_file_writer.h"
#include "common/error.h"
#include "common/read_at.h"

namespace k3 {

int open_regular_for_read(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_NONBLOCK);
  if (fd < 0) return -1;
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(ExitCode::kBadModel, path +
                                         ": is not a regular file (a FIFO, device or directory, or a link to "
                                         "one); k3 reads these only from regular files");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

File File::open_read(const std::string& path, bool direct) {
  int flags = O_RDONLY | O_CLOEXEC;
  if (direct) flags |= O_DIRECT;
  int fd = open_regular_for_read(path, flags);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT) throw Error(ExitCode::kBadModel, path + ": file not found");
    throw Error(ExitCode::kIo, path + ": cannot open: " + std::strerror(e));
  }
  File f;
  f.fd_ = fd;
  f.direct_ = direct;
  f.path_ = path;
  return f;
}

File::File(File&& o) noexcept : fd_(o.fd_), direct_(o.direct_), path_(std::move(o.path_)) { o.fd_ = -1; }

File& File::operator=(File&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    direct_ = o.direct_;
    path_ = std::move(o.path_);
    o.fd_ = -1;
  }
  return *this;
}

File::~File() {
  if (fd_ >= 0) ::close(fd_);
}

struct stat stat_open_file(int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) throw Error(ExitCode::kIo, path + ": cannot stat: " + std::strerror(errno));
  return st;
}

uint64_t File::size() const { return static_cast<uint64_t>(stat_open_file(fd_, path_).st_size); }

void File::pread_exact(void* dst, size_t n, uint64_t offset) const {
  const ReadAtResult r = read_at(fd_, dst, n, offset);
  if (r.error)
    throw Error(ExitCode::kIo, path_ + ": read of " + std::to_string(n) + " bytes at offset " + std::to_string(offset) +
                                   " failed: " + std::strerror(r.error));
  if (r.bytes < n)
    throw Error(ExitCode::kIo, path_ + ": file ends at " + std::to_string(offset + r.bytes) + " but " +
                                   std::to_string(n) + " bytes were expected at offset " + std::to_string(offset) +
                                   " (truncated file?)");
}

std::string read_text_file(const std::string& path, uint64_t max_bytes, ExitCode bad) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer before it is refused.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) throw Error(ExitCode::kBadModel, path + ": file not found");
    throw Error(ExitCode::kIo, path + ": cannot open: " + std::strerror(errno));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  const struct stat st = stat_open_file(fd, path);
  if (!S_ISREG(st.st_mode))
    throw Error(bad, path + ": is not a regular file (a device, FIFO or directory, or a link to one); give a file");
  // Not trusting st_size (/proc files report 0): read up to one byte past the cap.
  std::string data;
  char buf[1 << 16];
  while (size_t r = read_some(fd, buf, sizeof buf, path)) {
    data.append(buf, r);
    if (data.size() > max_bytes)
      throw Error(bad, path + ": is larger than " + std::to_string(max_bytes >> 20) +
                           " MiB, more than a file of this kind can hold; is it the right file?");
  }
  return data;
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string path_join(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

void pwrite_exact(int fd, const void* data, size_t n, uint64_t offset, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      throw Error(ExitCode::kIo, path + ": write failed: " + std::strerror(errno));
    }
    p += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
}

size_t read_some(int fd, void* buf, size_t n, const std::string& what) {
  while (true) {
    ssize_t r = ::read(fd, buf, n);
    if (r >= 0) return static_cast<size_t>(r);
    if (errno != EINTR) throw Error(ExitCode::kIo, "cannot read " + what + ": " + std::strerror(errno));
  }
}

std::string read_all(int fd, const std::string& what, uint64_t max_bytes) {
  std::string data;
  char buf[1 << 16];
  while (size_t r = read_some(fd, buf, sizeof buf, what)) {
    data.append(buf, r);
    if (data.size() > max_bytes)
      throw Error(ExitCode::kBadInput, what + " holds more than " + std::to_string(max_bytes >> 20) +
                                           " MiB, more than k3 reads whole (is the right file connected?)");
  }
  return data;
}

InputFd InputFd::open(const std::string& path, const std::string& what) {
  if (path == "-") return InputFd(0, "stdin");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) throw Error(ExitCode::kBadInput, path + ": " + what + " not found");
    throw Error(ExitCode::kIo, path + ": cannot open " + what + ": " + std::strerror(errno));
  }
  InputFd in(fd, path);
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
    throw Error(ExitCode::kBadInput, path + ": is a directory, not a " + what);
  // A device (a link to /dev/zero, a tty given as a path) never ends: refused.
  if (::fstat(fd, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)))
    throw Error(ExitCode::kBadInput, path +
                                         ": is not a regular file or a pipe (a device, or a link to one); give a "
                                         "file, a pipe or - for stdin");
  return in;
}

InputFd::~InputFd() {
  if (fd_ > 0) ::close(fd_);
}

std::string read_input(const std::string& path, const std::string& what) {
  const InputFd in = InputFd::open(path, what);
  // A regular file says its size: one too large is refused before a byte of
  // it is read (a 300 MB file would otherwise be read, and held, first).
  struct stat st {};
  if (::fstat(in.fd(), &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > kMaxWholeReadBytes)
    throw Error(ExitCode::kBadInput, in.name() + ": a file of " + std::to_string(st.st_size) + " bytes given as the " +
                                         what + ", which is read whole and at most " +
                                         std::to_string(kMaxWholeReadBytes >> 20) + " MiB (is it the right file?)");
  return read_all(in.fd(), in.name());
}

void write_all(int fd, std::string_view data, const std::string& what) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t w = ::write(fd, data.data() + done, data.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw Error(ExitCode::kIo, "cannot write " + what + ": " + std::strerror(errno));
    }
    done += static_cast<size_t>(w);
  }
}

void write_file_atomic(const std::string& path, const void* data, size_t n, OutputPolicy policy) {
  AtomicFileWriter out(path, policy);
  out.write(data, n);
  out.commit();
}

}  // namespace k3
