#include "io/direct_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "common/error.h"
#include "common/file.h"
#include "common/read_at.h"
#include "common/tool_main.h"
#include "io/aligned_buffer.h"

namespace k3 {

namespace {
void default_warning(const std::string& path, const std::string& why) {
  std::fprintf(stderr,
               "%s: warning: O_DIRECT refused for %s (%s); reading through the page cache instead, so "
               "streamed weights also occupy page cache\n",
               tool_name(), path.c_str(), why.c_str());
}
std::atomic<void (*)(const std::string&, const std::string&)> g_warn{default_warning};
std::atomic<bool> g_warned{false};
}  // namespace

void set_direct_fallback_warning(void (*warn)(const std::string&, const std::string&)) {
  g_warn = warn ? warn : default_warning;
  g_warned = false;
}

CoveringRead covering_read(uint64_t offset, uint64_t length) {
  CoveringRead r;
  r.offset = align_down(offset);
  r.skip = offset - r.offset;
  r.length = align_up(r.skip + length);
  return r;
}

DirectFile::DirectFile(const std::string& path, bool want_direct) : path_(path) {
  if (want_direct) {
    fd_ = open_regular_for_read(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
    if (fd_ >= 0) {
      direct_ = true;
      return;
    }
    if (errno != EINVAL) {
      int e = errno;
      if (e == ENOENT) throw Error(ExitCode::kBadModel, path + ": file not found");
      throw Error(ExitCode::kIo, path + ": cannot open: " + std::strerror(e));
    }
    if (!g_warned.exchange(true)) g_warn.load()(path, "the file system does not support it");
  }
  fd_ = open_regular_for_read(path, O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    int e = errno;
    if (e == ENOENT) throw Error(ExitCode::kBadModel, path + ": file not found");
    throw Error(ExitCode::kIo, path + ": cannot open: " + std::strerror(e));
  }
}

DirectFile::DirectFile(DirectFile&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), direct_(o.direct_), path_(std::move(o.path_)) {}

DirectFile& DirectFile::operator=(DirectFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    direct_ = o.direct_;
    path_ = std::move(o.path_);
  }
  return *this;
}

DirectFile::~DirectFile() {
  if (fd_ >= 0) ::close(fd_);
}

uint64_t DirectFile::size() const { return static_cast<uint64_t>(stat_open_file(fd_, path_).st_size); }

void DirectFile::read_aligned(void* dst, uint64_t offset, uint64_t length, uint64_t need) const {
  // O_DIRECT returns short only at end of file; read_at stops there rather
  // than issuing an unaligned follow-up read.
  const ReadAtResult r = read_at(fd_, dst, length, offset, direct_ ? kDirectAlign : 0);
  if (r.error)
    throw Error(ExitCode::kIo, path_ + ": read of " + std::to_string(length) + " bytes at offset " +
                                   std::to_string(offset) + " failed: " + std::strerror(r.error));
  const uint64_t done = r.bytes;
  if (done < need)
    throw Error(ExitCode::kIo, path_ + ": file ends at " + std::to_string(offset + done) + " but " +
                                   std::to_string(need) + " bytes were expected at offset " + std::to_string(offset) +
                                   " (the file shrank or was truncated after it was opened; re-download it)");
}

}  // namespace k3
