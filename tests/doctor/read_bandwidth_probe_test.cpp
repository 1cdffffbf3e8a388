// The O_DIRECT bandwidth probe stays within its byte cap and returns, and
// reports files it cannot use instead of failing.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "doctor/read_bandwidth_probe.h"

namespace fs = std::filesystem;
using namespace k3::doctor;

namespace {
class ProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("k3-doctor-probe-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    file_ = (dir_ / "big.bin").string();
    std::ofstream out(file_, std::ios::binary);
    std::vector<char> block(1 << 20);
    for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>(i * 31);
    for (int i = 0; i < 64; ++i) out.write(block.data(), block.size());  // 64 MiB
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string file_;
};
}  // namespace

TEST_F(ProbeTest, NeverReadsMoreThanTheByteCap) {
  ProbeLimits lim;
  lim.seconds = 30;  // the byte cap, not the clock, must stop it
  lim.max_bytes = 8u << 20;
  lim.request_bytes = {1u << 20, 2u << 20};
  lim.queue_depths = {1, 4};
  ProbeResult r = probe_read_bandwidth(file_, lim);
  ASSERT_TRUE(r.error.empty()) << r.error;
  ASSERT_EQ(r.points.size(), 4u);
  EXPECT_LE(r.total_bytes, lim.max_bytes);
  EXPECT_GT(r.total_bytes, 0u);
  uint64_t sum = 0;
  for (const ProbePoint& p : r.points) {
    EXPECT_LE(p.bytes, lim.max_bytes / 4) << p.request_bytes << "@" << p.queue_depth;
    EXPECT_EQ(p.bytes, p.requests * p.request_bytes);
    EXPECT_GT(p.requests, 0u);
    sum += p.bytes;
  }
  EXPECT_EQ(sum, r.total_bytes);
  EXPECT_EQ(r.file_size, 64u << 20);
}

TEST_F(ProbeTest, ReturnsWhenTheTimeBudgetEnds) {
  ProbeLimits lim;
  lim.seconds = 0.2;
  lim.max_bytes = uint64_t{64} << 30;  // far more than 0.2 s can read: the clock must stop it
  lim.request_bytes = {1u << 20};
  lim.queue_depths = {1, 4, 16};
  ProbeResult r = probe_read_bandwidth(file_, lim);
  ASSERT_TRUE(r.error.empty()) << r.error;
  ASSERT_EQ(r.points.size(), 3u);
  EXPECT_LE(r.total_bytes, lim.max_bytes);
  for (const ProbePoint& p : r.points) EXPECT_GE(p.mb_per_s(), 0.0);
}

TEST_F(ProbeTest, UnalignedRequestsAreRoundedAndTinyFilesSkipped) {
  ProbeLimits lim;
  lim.seconds = 0.2;
  lim.max_bytes = 4u << 20;
  lim.request_bytes = {17'547'264 + 1, uint64_t{128} << 20};  // the second is larger than the file
  lim.queue_depths = {1};
  ProbeResult r = probe_read_bandwidth(file_, lim);
  ASSERT_EQ(r.points.size(), 2u);
  EXPECT_EQ(r.points[0].request_bytes % 4096, 0u);
  EXPECT_GE(r.points[0].request_bytes, 17'547'265u);
  EXPECT_EQ(r.points[0].requests, 0u);  // a 17.5 MB read does not fit the 2 MB share
  EXPECT_TRUE(r.points[1].skipped);
  EXPECT_EQ(r.total_bytes, 0u);
}

TEST_F(ProbeTest, MissingFileIsAnErrorNotACrash) {
  ProbeLimits lim;
  lim.request_bytes = {1u << 20};
  ProbeResult r = probe_read_bandwidth((dir_ / "absent.bin").string(), lim);
  EXPECT_FALSE(r.error.empty());
  EXPECT_TRUE(r.points.empty());
}
