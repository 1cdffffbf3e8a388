#include "io/spill_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/atomic_file_writer.h"
#include "common/error.h"

namespace k3 {

std::string SpillFile::what() const { return dir_ + ": " + purpose_; }

SpillFile::SpillFile(const std::string& dir, const std::string& stem, const std::string& purpose)
    : dir_(dir), purpose_(purpose) {
  const std::string base = (dir.empty() ? std::string(".") : dir) + "/" + stem;
  // A random name cannot be planted in advance; O_EXCL|O_NOFOLLOW refuses
  // one that was anyway. A few tries cover an (astronomically rare) clash.
  for (int attempt = 0;; ++attempt) {
    const std::string path = random_temp_name(base);
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ >= 0) {
      if (::unlink(path.c_str()) != 0) {
        const int err = errno;
        ::close(fd_);
        fd_ = -1;
        throw Error(ExitCode::kIo, what() + ": cannot unlink " + path + ": " + std::strerror(err));
      }
      return;
    }
    if (errno != EEXIST || attempt >= 3)
      throw Error(ExitCode::kIo, what() + ": cannot create " + path + ": " + std::strerror(errno));
  }
}

SpillFile::~SpillFile() {
  if (fd_ >= 0) ::close(fd_);
}

void SpillFile::write(uint64_t offset, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  for (size_t done = 0; done < n;) {
    const ssize_t r = ::pwrite(fd_, p + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      throw Error(ExitCode::kIo, what() + ": cannot write " + std::to_string(n) + " bytes at " +
                                     std::to_string(offset) + ": " + std::strerror(r < 0 ? errno : ENOSPC) +
                                     " (free space there, or give the trunk a disk with room)");
    done += static_cast<size_t>(r);
  }
  written_ += n;
}

void SpillFile::read(uint64_t offset, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  for (size_t done = 0; done < n;) {
    const ssize_t r = ::pread(fd_, p + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0)
      throw Error(ExitCode::kIo, what() + ": cannot read at " + std::to_string(offset) + ": " + std::strerror(errno));
    if (r == 0)
      throw Error(ExitCode::kIo,
                  what() + ": ends before byte " + std::to_string(offset + n) + " (it was shortened while in use)");
    done += static_cast<size_t>(r);
  }
  read_ += n;
}

}  // namespace k3
