#include "fetch/download_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/error.h"
#include "common/file.h"
#include "fetch/fetch_manifest.h"

namespace k3 {

namespace {

// The K3_FETCH_FAIL_WRITE_AFTER budget, shared by every transfer thread.
class WriteBudget {
 public:
  WriteBudget() {
    const char* env = std::getenv("K3_FETCH_FAIL_WRITE_AFTER");
    if (env && *env) {
      limited_ = true;
      left_ = std::strtoll(env, nullptr, 10);
    }
  }
  // How many of n bytes may be written; fewer means "disk full".
  size_t take(size_t n) {
    if (!limited_) return n;
    int64_t before = left_.fetch_sub(static_cast<int64_t>(n));
    if (before <= 0) return 0;
    return static_cast<size_t>(std::min<int64_t>(before, static_cast<int64_t>(n)));
  }

 private:
  bool limited_ = false;
  std::atomic<int64_t> left_{0};
};

}  // namespace

size_t write_budget_take(size_t n) {
  static WriteBudget budget;
  return budget.take(n);
}

int write_budgeted(int fd, const char* data, size_t n, uint64_t at) {
  const size_t allowed = write_budget_take(n);
  for (size_t done = 0; done < allowed;) {
    const ssize_t w = ::pwrite(fd, data + done, allowed - done, static_cast<off_t>(at + done));
    if (w < 0 && errno != EINTR) return errno;
    if (w > 0) done += static_cast<size_t>(w);
  }
  return allowed < n ? ENOSPC : 0;
}

uint64_t free_bytes(const std::string& dir) {
  if (const char* env = std::getenv("K3_FETCH_FREE_BYTES"); env && *env) return std::strtoull(env, nullptr, 10);
  struct statvfs sv;
  if (::statvfs(dir.c_str(), &sv) != 0)
    throw Error(ExitCode::kIo, dir + ": cannot read free space: " + std::strerror(errno));
  return static_cast<uint64_t>(sv.f_bavail) * sv.f_frsize;
}

DownloadPathStat stat_path(const std::string& p) {
  DownloadPathStat s;
  struct stat st;
  if (::lstat(p.c_str(), &st) == 0) {
    s.regular = S_ISREG(st.st_mode);
    s.exists = true;
    s.size = static_cast<uint64_t>(st.st_size);
    s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  }
  return s;
}

void fsync_dir_of(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

int open_own_file(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  struct stat st;
  if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
  }
  const int e = errno;
  if (fd >= 0) ::close(fd);
  struct stat l;
  if (fd >= 0 || e == ELOOP || (::lstat(path.c_str(), &l) == 0 && !S_ISREG(l.st_mode)))
    throw Error(ExitCode::kIo, path +
                                   ": is not a regular file (a symbolic link, directory or device); "
                                   "k3-fetch-verify will not write through it: remove it and run again");
  throw Error(ExitCode::kIo, path + ": cannot open: " + std::strerror(e));
}

void check_no_linked_parents(const std::string& dir, const std::string& rel) {
  for (size_t slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', slash + 1)) {
    const std::string p = path_join(dir, rel.substr(0, slash));
    struct stat l;
    if (::lstat(p.c_str(), &l) == 0 && !S_ISDIR(l.st_mode))
      throw Error(ExitCode::kIo, p + ": is not a directory (a symbolic link?); k3-fetch-verify writes only inside " +
                                     dir + ": remove it and run again");
  }
}

void refuse_own_name(const std::string& path, const std::string& repo) {
  const size_t slash = path.find_last_of('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string manifest = kFetchManifestName;
  const bool manifest_name = slash == std::string::npos && base.compare(0, manifest.size(), manifest) == 0;
  const bool part = base.size() >= 5 && base.compare(base.size() - 5, 5, ".part") == 0;
  if (manifest_name || part)
    throw Error(ExitCode::kNetwork, repo + " holds a file named '" + path + "', which collides with " +
                                        (part ? "the .part files" : "the download manifest " + manifest) +
                                        " that k3-fetch-verify writes itself; leave it out with --exclude '" + path +
                                        "' (nothing was downloaded)");
}

[[noreturn]] void throw_write_error(const std::string& path, int e) {
  if (e == ENOSPC || e == EDQUOT)
    throw Error(ExitCode::kIo, "disk full while writing " + path + " (" + std::strerror(e) +
                                   "): finished files are kept and this one stays as .part; free some space "
                                   "and run the same command again to resume");
  throw Error(ExitCode::kIo, path + ": write failed: " + std::strerror(e));
}

}  // namespace k3
