#include "common/terminal_line.h"

#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

namespace k3 {

int terminal_columns(int fd) {
  if (::isatty(fd) != 1) return 0;
  struct winsize ws {};
  if (::ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) return 80;  // a terminal that does not say: the usual
  return ws.ws_col;
}

std::string fresh_line(int fd) {
  const int cols = terminal_columns(fd);
  if (cols == 0) return {};
  return std::string(static_cast<size_t>(cols), ' ') + "\r\x1b[K";
}

std::string title_sequence(const std::string& title) {
  std::string clean;
  for (char c : title)
    if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) clean += c;
  return "\x1b]2;" + clean + "\x07";
}

void wait_for_pipe_reader(int fd, int max_ms) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) return;
  for (int waited = 0; waited < max_ms; waited += 5) {
    int unread = 0;
    // Linux answers FIONREAD on either end of a pipe with the bytes not yet read.
    if (::ioctl(fd, FIONREAD, &unread) != 0 || unread == 0) break;
    const struct timespec five_ms { 0, 5000000 };
    ::nanosleep(&five_ms, nullptr);
  }
  // The reader has taken the last bytes; give it a moment to write their text.
  const struct timespec settle { 0, 20000000 };
  ::nanosleep(&settle, nullptr);
}

}  // namespace k3
