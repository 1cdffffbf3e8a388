#include "common/quiet.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/error.h"
#include "common/setting_spelling.h"

namespace k3 {

namespace {
int g_error_fd = 2;
}

void enter_quiet_mode() {
  if (g_error_fd != 2) return;
  std::fflush(stderr);
  const int saved = ::fcntl(2, F_DUPFD_CLOEXEC, 3);
  const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (saved < 0 || null < 0)
    throw Error(ExitCode::kIo, spelled(kQuietSetting) + ": cannot redirect stderr: " + std::strerror(errno));
  ::dup2(null, 2);
  ::close(null);
  g_error_fd = saved;
}

int error_fd() { return g_error_fd; }

}  // namespace k3
