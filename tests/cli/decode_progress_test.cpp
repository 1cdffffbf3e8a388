// The per-token line during --gen: only on a terminal, rewritten in place,
// erased at the end; its figures (tokens done of N, s/token, ETA).
#include "cli/decode_progress.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "lib/test_util.h"

namespace k3 {
namespace {

using test::file_contents;

TEST(DecodeProgress, OffATerminalPrintsNothing) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    DecodeProgress p("k3-forward", 3, DecodeProgress::Mode::kOff, f, std::chrono::seconds(0));
    for (int i = 1; i <= 3; ++i) p.update(i);
    p.finish();
  }
  EXPECT_EQ(file_contents(f), "");
  std::fclose(f);
}

TEST(DecodeProgress, OnATerminalRewritesOneLineAndErasesIt) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  DecodeProgress p("k3-forward", 3, DecodeProgress::Mode::kLine, f, std::chrono::seconds(0));
  for (int i = 1; i <= 3; ++i) p.update(i);
  p.finish();
  const std::string s = file_contents(f);
  EXPECT_EQ(s.find('\n'), std::string::npos) << s;    // never a new line
  EXPECT_EQ(s.rfind("\r\x1b[K"), s.size() - 4) << s;  // ends erased
  EXPECT_NE(s.find("\rk3-forward: token 1/3\x1b[K"), std::string::npos) << s;
  EXPECT_NE(s.find("\rk3-forward: token 3/3, "), std::string::npos) << s;
  EXPECT_NE(s.find(" s/token, ETA 0 s"), std::string::npos) << s;
  std::fclose(f);
}

TEST(DecodeProgress, RateLimitedAfterTheFirstToken) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  DecodeProgress p("k3-forward", 100, DecodeProgress::Mode::kLine, f, std::chrono::hours(1));
  for (int i = 1; i <= 100; ++i) p.update(i);
  EXPECT_EQ(file_contents(f), "\rk3-forward: token 1/100\x1b[K");
  p.finish();
  std::fclose(f);
}

TEST(DecodeProgress, NothingToShowWithoutGen) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    DecodeProgress p("k3-forward", 0, DecodeProgress::Mode::kLine, f, std::chrono::seconds(0));
    p.update(1);
  }
  EXPECT_EQ(file_contents(f), "");
  std::fclose(f);
}

// Text may be on the screen: the figures go to the window title only, which
// never moves the cursor, and the user's title is given back at the end.
TEST(DecodeProgress, TitleModeNeverWritesOnTheScreen) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  DecodeProgress p("k3-forward", 3, DecodeProgress::Mode::kTitle, f, std::chrono::seconds(0));
  for (int i = 1; i <= 3; ++i) p.update(i);
  p.finish();
  const std::string s = file_contents(f);
  EXPECT_EQ(s.find('\r'), std::string::npos) << s;
  EXPECT_EQ(s.find('\n'), std::string::npos) << s;
  EXPECT_EQ(s.find("\x1b[K"), std::string::npos) << s;
  EXPECT_EQ(s.rfind("\x1b[22;2t", 0), 0u) << s;  // title saved first
  EXPECT_NE(s.find("\x1b]2;k3-forward: token 1/3\x07"), std::string::npos) << s;
  EXPECT_EQ(s.find("\x1b[22;2t", 1), std::string::npos) << s;  // saved once
  EXPECT_EQ(s.rfind("\x1b[23;2t"), s.size() - 7) << s;         // given back at the end
  std::fclose(f);
}

TEST(DecodeProgress, LineFigures) {
  EXPECT_EQ(DecodeProgress::line("k3-forward", 1, 64, 0), "k3-forward: token 1/64");
  EXPECT_EQ(DecodeProgress::line("k3-forward", 16, 64, 2.5), "k3-forward: token 16/64, 2.50 s/token, ETA 120 s");
}

}  // namespace
}  // namespace k3
