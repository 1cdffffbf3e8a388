// fresh_line(): nothing off a terminal; on one, a line's width of spaces
// then "\r\e[K" (what that does on a screen is checked by
// tests/cli/terminal_screen_test.sh with a terminal emulator).
#include "common/terminal_line.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>

namespace k3 {
namespace {

TEST(TerminalLine, NothingOffATerminal) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(fresh_line(fileno(f)), "");
  EXPECT_EQ(terminal_columns(fileno(f)), 0);
  std::fclose(f);
}

TEST(TerminalLine, ALineOfSpacesThenBackAndClearOnATerminal) {
  int master = -1, slave = -1;
  struct winsize ws {};
  ws.ws_col = 37;
  ws.ws_row = 10;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, &ws), 0);
  EXPECT_EQ(terminal_columns(slave), 37);
  EXPECT_EQ(fresh_line(slave), std::string(37, ' ') + "\r\x1b[K");
  ::close(master);
  ::close(slave);
}

TEST(TerminalLine, TitleDropsControlCharacters) {
  EXPECT_EQ(title_sequence("k3-forward: token 1/3"), "\x1b]2;k3-forward: token 1/3\x07");
  EXPECT_EQ(title_sequence("a\x07"
                           "b\x1b"
                           "c\n"),
            "\x1b]2;abc\x07");
}

TEST(TerminalLine, WaitReturnsAtOnceForAFile) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  wait_for_pipe_reader(fileno(f), 10000);  // a file: no wait (the test would time out otherwise)
  std::fclose(f);
}

}  // namespace
}  // namespace k3
