// The O_DIRECT bandwidth probe stays within its byte cap and returns, and
// reports files it cannot use instead of failing.
#include <gtest/gtest.h>

#include <fcntl.h>
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

// A sparse file: 64 MiB long, 1 MiB of data at 32 MiB, holes elsewhere
// (read as zeros at memory speed, which once showed as 18-74 GB/s).
class SparseProbeTest : public ProbeTest {
 protected:
  void SetUp() override {
    ProbeTest::SetUp();
    sparse_ = (dir_ / "sparse.bin").string();
    std::ofstream out(sparse_, std::ios::binary);
    std::vector<char> block(1 << 20, 'k');
    out.seekp(32 << 20);
    out.write(block.data(), block.size());
    out.close();
    fs::resize_file(sparse_, 64u << 20);
  }
  std::string sparse_;
};

TEST_F(SparseProbeTest, TheDataExtentsAreTheWrittenBytes) {
  const int fd = ::open(sparse_.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  const std::vector<DataExtent> extents = data_extents(fd, 64u << 20);
  ::close(fd);
  ASSERT_EQ(extents.size(), 1u);
  EXPECT_EQ(extents[0].offset, 32u << 20);
  EXPECT_EQ(extents[0].length, 1u << 20);
}

TEST_F(SparseProbeTest, OnlyRequestsTheDataHoldsAreRead) {
  ProbeLimits lim;
  lim.seconds = 0.3;
  lim.max_bytes = 64u << 20;
  // 512 KiB reads fit the 1 MiB of data; 2 MiB reads would fit the file
  // (64 MiB) but no data extent: skipped, not read from holes.
  lim.request_bytes = {512u << 10, 2u << 20};
  lim.queue_depths = {1};
  ProbeResult r = probe_read_bandwidth(sparse_, lim);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.file_size, 64u << 20);
  EXPECT_EQ(r.data_bytes, 1u << 20);
  ASSERT_EQ(r.points.size(), 2u);
  EXPECT_FALSE(r.points[0].skipped);
  EXPECT_GT(r.points[0].requests, 0u);
  EXPECT_TRUE(r.points[1].skipped);
}

TEST_F(SparseProbeTest, AllHolesCannotBeMeasured) {
  const std::string holes = (dir_ / "holes.bin").string();
  { std::ofstream touch(holes); }
  fs::resize_file(holes, 64u << 20);
  ProbeLimits lim;
  lim.request_bytes = {1u << 20};
  lim.queue_depths = {1};
  ProbeResult r = probe_read_bandwidth(holes, lim);
  EXPECT_EQ(r.data_bytes, 0u);
  EXPECT_EQ(r.total_bytes, 0u);
  EXPECT_NE(r.error.find("cannot measure: a sparse file with 0 B of data"), std::string::npos) << r.error;
}

TEST_F(ProbeTest, AFileWithoutHolesIsAllData) {
  const int fd = ::open(file_.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  const std::vector<DataExtent> extents = data_extents(fd, 64u << 20);
  ::close(fd);
  ASSERT_EQ(extents.size(), 1u);
  EXPECT_EQ(extents[0].offset, 0u);
  EXPECT_EQ(extents[0].length, 64u << 20);
}
