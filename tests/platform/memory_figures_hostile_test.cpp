// Memory figures k3 plans with, when they are not byte counts: a
// K3_AVAILABLE_MEMORY of -1, 2^64, garbage or 0 is a usage error naming the
// variable (it was silently ignored, or wrapped into "the plan fits" for
// 703,687 GB), and a cgroup memory.max holding garbage is a limit of 0 (it
// was read as no limit at all).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "lib/test_util.h"
#include "platform/cgroup_memory.h"
#include "platform/memory_limits.h"

using namespace k3;

namespace {
const std::string kData = std::string(K3_TEST_DATA) + "/doctor/";
}  // namespace

TEST(AvailableMemoryOverride, ByteCountsAreTaken) {
  EXPECT_EQ(parse_available_memory_override("1"), 1u);
  EXPECT_EQ(parse_available_memory_override("3000000000"), 3000000000u);
  EXPECT_EQ(parse_available_memory_override("1152921504606846976"), uint64_t{1} << 60);
}

TEST(AvailableMemoryOverride, AnythingElseIsAUsageErrorNamingTheVariable) {
  for (const char* bad :
       {"-1", "18446744073709551615", "18446744073709551616", "99999999999999999999999", "1152921504606846977", "0", "",
        "garbage", "8G", " 5", "5 ", "+5", "0x10", "1e9", "3.5", "5\n6"}) {
    std::string msg;
    EXPECT_EQ(test::code_of([&] { parse_available_memory_override(bad); }, &msg), ExitCode::kUsage) << bad;
    EXPECT_NE(msg.find("K3_AVAILABLE_MEMORY="), std::string::npos) << msg;
    EXPECT_NE(msg.find("not a byte count"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;  // one line, even for a value with a newline
  }
}

TEST(AvailableMemoryOverride, ReadMemoryLimitsRefusesABadValue) {
  ::setenv("K3_AVAILABLE_MEMORY", "-1", 1);
  EXPECT_EQ(test::code_of([] { read_memory_limits(kData + "v2-container"); }), ExitCode::kUsage);
  ::setenv("K3_AVAILABLE_MEMORY", "18446744073709551616", 1);
  EXPECT_EQ(test::code_of([] { read_memory_limits(kData + "v2-container"); }), ExitCode::kUsage);
  ::setenv("K3_AVAILABLE_MEMORY", "2000000000", 1);
  EXPECT_EQ(read_memory_limits(kData + "v2-container").available(), 2000000000u);
  ::unsetenv("K3_AVAILABLE_MEMORY");
}

TEST(CgroupGarbage, AMemoryMaxThatIsNoByteCountIsALimitOfZero) {
  ::unsetenv("K3_AVAILABLE_MEMORY");
  const std::filesystem::path root = test::fresh_dir("cgroup-garbage");
  std::filesystem::copy(kData + "v2-container", root, std::filesystem::copy_options::recursive);
  for (const char* garbage : {"eight gigs\n", "-1\n", "18446744073709551616\n", "\n", "12abc\n"}) {
    std::ofstream(root / "sys/fs/cgroup/memory.max", std::ios::trunc) << garbage;
    const CgroupMemory c = read_cgroup_memory(root.string());
    ASSERT_TRUE(c.v2.limit) << garbage;
    EXPECT_EQ(*c.v2.limit, 0u) << garbage;
    EXPECT_TRUE(c.v2.limit_unreadable) << garbage;
    const MemoryLimits m = read_memory_limits(root.string());
    EXPECT_EQ(m.available(), 0u) << garbage;
    EXPECT_NE(m.cgroup_source.find("memory.max (not a byte count, taken as 0)"), std::string::npos) << m.cgroup_source;
  }
  // "max" is still no limit, and a real figure is still that figure.
  std::ofstream(root / "sys/fs/cgroup/memory.max", std::ios::trunc) << "max\n";
  EXPECT_FALSE(read_cgroup_memory(root.string()).v2.limit);
  std::ofstream(root / "sys/fs/cgroup/memory.max", std::ios::trunc) << "4096\n";
  EXPECT_EQ(read_cgroup_memory(root.string()).v2.limit.value_or(1), 4096u);
  EXPECT_FALSE(read_cgroup_memory(root.string()).v2.limit_unreadable);
  std::filesystem::remove_all(root);
}
