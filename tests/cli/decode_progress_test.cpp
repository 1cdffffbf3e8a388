// The per-token line during --gen: only on a terminal, rewritten in place,
// erased at the end; its figures (tokens done of N, s/token, ETA).
#include "cli/decode_progress.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace k3 {
namespace {

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  char buf[256];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}

TEST(DecodeProgress, OffATerminalPrintsNothing) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    DecodeProgress p("k3-forward", 3, false, f, std::chrono::seconds(0));
    for (int i = 1; i <= 3; ++i) p.update(i);
    p.finish();
  }
  EXPECT_EQ(contents(f), "");
  std::fclose(f);
}

TEST(DecodeProgress, OnATerminalRewritesOneLineAndErasesIt) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  DecodeProgress p("k3-forward", 3, true, f, std::chrono::seconds(0));
  for (int i = 1; i <= 3; ++i) p.update(i);
  p.finish();
  const std::string s = contents(f);
  EXPECT_EQ(s.find('\n'), std::string::npos) << s;  // never a new line
  EXPECT_EQ(s.rfind("\r\x1b[K"), s.size() - 4) << s;  // ends erased
  EXPECT_NE(s.find("\rk3-forward: token 1/3\x1b[K"), std::string::npos) << s;
  EXPECT_NE(s.find("\rk3-forward: token 3/3, "), std::string::npos) << s;
  EXPECT_NE(s.find(" s/token, ETA 0 s"), std::string::npos) << s;
  std::fclose(f);
}

TEST(DecodeProgress, RateLimitedAfterTheFirstToken) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  DecodeProgress p("k3-forward", 100, true, f, std::chrono::hours(1));
  for (int i = 1; i <= 100; ++i) p.update(i);
  EXPECT_EQ(contents(f), "\rk3-forward: token 1/100\x1b[K");
  p.finish();
  std::fclose(f);
}

TEST(DecodeProgress, NothingToShowWithoutGen) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    DecodeProgress p("k3-forward", 0, true, f, std::chrono::seconds(0));
    p.update(1);
  }
  EXPECT_EQ(contents(f), "");
  std::fclose(f);
}

TEST(DecodeProgress, LineFigures) {
  EXPECT_EQ(DecodeProgress::line("k3-forward", 1, 64, 0), "k3-forward: token 1/64");
  EXPECT_EQ(DecodeProgress::line("k3-forward", 16, 64, 2.5), "k3-forward: token 16/64, 2.500 s/token, ETA 120 s");
}

}  // namespace
}  // namespace k3
