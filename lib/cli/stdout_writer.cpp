#include "cli/stdout_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/error.h"

namespace k3 {

void write_all_stdout(std::string_view bytes) {
  if (std::fflush(stdout) != 0) throw Error(ExitCode::kIo, std::string("cannot write stdout: ") + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(1, bytes.data() + done, bytes.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw Error(ExitCode::kIo, std::string("cannot write stdout: ") + std::strerror(errno));
    }
    done += static_cast<size_t>(w);
  }
}

void write_token_id_line(int32_t id) {
  char line[16];
  const int n = std::snprintf(line, sizeof line, "%d\n", id);
  write_all_stdout(std::string_view(line, static_cast<size_t>(n)));
}

}  // namespace k3
