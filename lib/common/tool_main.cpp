#include "common/tool_main.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <exception>
#include <new>

#include "common/error.h"
#include "common/quiet.h"

namespace k3 {

namespace {

// Written once before the tool's body runs (no threads exist yet), then only read.
const char* g_tool_name = "k3";

}  // namespace

const char* tool_name() { return g_tool_name; }

bool occupy_standard_descriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    // Opened for the direction the stream is never used in, so a read of a
    // closed stdin or a write to a closed stdout/stderr still fails (EBADF)
    // as it did, and is reported as such, instead of vanishing into /dev/null.
    const int got = ::open("/dev/null", (fd == 0 ? O_WRONLY : O_RDONLY));
    if (got == -1) return false;
    if (got != fd) {  // a lower number was free after all: move it into place
      const bool moved = ::dup2(got, fd) == fd;
      ::close(got);
      if (!moved) return false;
    }
  }
  return true;
}

int run_tool(const char* tool, const std::function<int()>& body) {
  g_tool_name = tool;
  // Before anything is opened: a file opened while 0, 1 or 2 is closed takes
  // that number, and the tool's own output would then land in it (k3-chat
  // wrote its reply into the history file when started with stdout closed).
  if (!occupy_standard_descriptors()) return static_cast<int>(ExitCode::kIo);
  try {
    return body();
  } catch (const Error& e) {
    std::fflush(stderr);
    dprintf(error_fd(), "%s: %s\n", tool, e.what());
    return e.exit_code();
  } catch (const std::bad_alloc&) {
    // Not a bug but a limit: the plans count what they can, and an allocation
    // past a limit they could not see (ulimit -v, overcommit off) lands here.
    std::fflush(stderr);
    dprintf(error_fd(),
            "%s: out of memory: an allocation was refused (a memory limit: ulimit -v, a cgroup, or the machine's "
            "memory); run with less (a smaller batch, context or preset)\n",
            tool);
    return static_cast<int>(ExitCode::kResource);
  } catch (const std::exception& e) {
    std::fflush(stderr);
    dprintf(error_fd(), "%s: internal error: %s (please report it)\n", tool, e.what());
    return static_cast<int>(ExitCode::kInternal);
  }
}

}  // namespace k3
