// The one pread loop: whole reads, the end of the file, O_DIRECT's stop at an
// unaligned end, and failures reported as errno, never thrown.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/read_at.h"

namespace k3 {
namespace {

class ReadAtTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/k3_read_at_XXXXXX";
    fd_ = ::mkstemp(name);
    ASSERT_GE(fd_, 0);
    ::unlink(name);
    data_.resize(10000);
    for (size_t i = 0; i < data_.size(); ++i) data_[i] = static_cast<char>(i * 7 + 3);
    ASSERT_EQ(::write(fd_, data_.data(), data_.size()), static_cast<ssize_t>(data_.size()));
  }
  void TearDown() override { ::close(fd_); }
  int fd_ = -1;
  std::string data_;
};

TEST_F(ReadAtTest, ReadsWhatWasAskedAt) {
  std::string buf(3000, '\0');
  const ReadAtResult r = read_at(fd_, buf.data(), buf.size(), 1234);
  EXPECT_EQ(r.bytes, 3000u);
  EXPECT_EQ(r.error, 0);
  EXPECT_EQ(buf, data_.substr(1234, 3000));
}

TEST_F(ReadAtTest, StopsAtTheEndOfTheFile) {
  std::string buf(5000, '\0');
  const ReadAtResult r = read_at(fd_, buf.data(), buf.size(), 8000);
  EXPECT_EQ(r.bytes, 2000u);  // short, and no error: the file ends
  EXPECT_EQ(r.error, 0);
  EXPECT_EQ(buf.substr(0, 2000), data_.substr(8000));
  EXPECT_EQ(read_at(fd_, buf.data(), 10, 20000).bytes, 0u);
}

TEST_F(ReadAtTest, StopsAtAnUnalignedEndWhenAsked) {
  std::string buf(8192, '\0');
  const ReadAtResult r = read_at(fd_, buf.data(), buf.size(), 4096, 4096);
  EXPECT_EQ(r.bytes, 10000u - 4096u);
  EXPECT_EQ(r.error, 0);
}

TEST(ReadAt, ReportsAFailedReadAsErrno) {
  char buf[16];
  EXPECT_EQ(read_at(-1, buf, sizeof buf, 0).error, EBADF);
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  const ReadAtResult r = read_at(p[0], buf, sizeof buf, 0);  // a pipe has no offsets
  EXPECT_EQ(r.error, ESPIPE);
  EXPECT_EQ(r.bytes, 0u);
  ::close(p[0]);
  ::close(p[1]);
}

}  // namespace
}  // namespace k3
