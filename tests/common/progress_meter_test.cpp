// ProgressMeter on a terminal (K3_PROGRESS=tty): a line cut by an exception
// (k3-pack interrupted, a read error) is ended before the error message, and
// a meter replaced without an exception leaves its line to be rewritten.
#include "common/progress_meter.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

namespace k3 {
namespace {

// Runs `fn` with stderr going to a temporary file; what it wrote.
template <typename Fn>
std::string stderr_of(Fn&& fn) {
  std::fflush(stderr);
  FILE* tmp = std::tmpfile();
  const int saved = ::dup(2);
  ::dup2(::fileno(tmp), 2);
  fn();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::string out;
  std::rewind(tmp);
  for (int c; (c = std::fgetc(tmp)) != EOF;) out += static_cast<char>(c);
  std::fclose(tmp);
  return out;
}

// A meter that has printed a line (its first update comes 200 ms after it starts).
void print_one_line(ProgressMeter& m) {
  std::this_thread::sleep_for(std::chrono::milliseconds(220));
  m.update(10);
  ASSERT_TRUE(m.printed());
}

TEST(ProgressMeter, ALineCutByAnExceptionEndsBeforeTheMessage) {
  ::setenv("K3_PROGRESS", "tty", 1);
  const std::string out = stderr_of([] {
    try {
      ProgressMeter meter("k3-pack: packing", 100);
      print_one_line(meter);
      throw std::runtime_error("interrupted");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "k3-pack: %s\n", e.what());
    }
  });
  ::unsetenv("K3_PROGRESS");
  ASSERT_NE(out.find("ETA"), std::string::npos) << out;
  EXPECT_NE(out.find("\x1b[K\nk3-pack: interrupted\n"), std::string::npos) << out;
}

TEST(ProgressMeter, AMeterReplacedWithoutAnExceptionLeavesItsLineOpen) {
  ::setenv("K3_PROGRESS", "tty", 1);
  const std::string out = stderr_of([] {
    {
      ProgressMeter meter("k3-serve: loading", 100);
      print_one_line(meter);
    }
    std::fputs("\rnext step", stderr);
  });
  ::unsetenv("K3_PROGRESS");
  EXPECT_NE(out.find("\x1b[K\rnext step"), std::string::npos) << out;
}

TEST(ProgressMeter, FinishedLineIsNotEndedTwice) {
  ::setenv("K3_PROGRESS", "tty", 1);
  const std::string out = stderr_of([] {
    try {
      ProgressMeter meter("k3-pack: packing", 100);
      print_one_line(meter);
      meter.finish(100);
      throw std::runtime_error("later");
    } catch (const std::exception&) {}
  });
  ::unsetenv("K3_PROGRESS");
  EXPECT_EQ(out.find("\n\n"), std::string::npos) << out;
  EXPECT_EQ(out.back(), '\n');
}

}  // namespace
}  // namespace k3
