// append_printf against snprintf's own text, and past any fixed buffer.
#include "common/append_printf.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace k3 {
namespace {

TEST(AppendPrintf, AppendsWhatSnprintfWrites) {
  std::string out = "head: ";
  append_printf(out, "%-12s %8.1f %llu %s", "laptop", 2.25, 18446744073709551615ull, "end");
  char want[128];
  std::snprintf(want, sizeof want, "%-12s %8.1f %llu %s", "laptop", 2.25, 18446744073709551615ull, "end");
  EXPECT_EQ(out, std::string("head: ") + want);
}

TEST(AppendPrintf, NothingForAnEmptyFormat) {
  std::string out = "kept";
  append_printf(out, "%s", "");
  EXPECT_EQ(out, "kept");
}

TEST(AppendPrintf, LongerThanAnyLineBufferIsNotCut) {
  const std::string path(5000, 'x');
  std::string out;
  append_printf(out, "# model %s; done\n", path.c_str());
  EXPECT_EQ(out.size(), 8 + path.size() + 7);
  EXPECT_EQ(out.substr(out.size() - 7), "; done\n");
  EXPECT_EQ(out.find('\0'), std::string::npos);
}

}  // namespace
}  // namespace k3
