// The one byte formatter: powers of 1000 at every step, the decimals the
// tools' figures are pinned to.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/byte_format.h"

namespace k3 {
namespace {

TEST(FormatBytes, PowersOfAThousand) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(999), "999 B");
  EXPECT_EQ(format_bytes(1000), "1.0 kB");
  EXPECT_EQ(format_bytes(4096), "4.1 kB");
  EXPECT_EQ(format_bytes(1000000), "1.0 MB");
  EXPECT_EQ(format_bytes(812300000), "812.3 MB");
  EXPECT_EQ(format_bytes(1000000000), "1.00 GB");
  EXPECT_EQ(format_bytes(17179869184ull), "17.18 GB");  // 16 GiB is 17.18 GB
  EXPECT_EQ(format_bytes(999990000000ull), "999.99 GB");
  EXPECT_EQ(format_bytes(1000000000000ull), "1.00 TB");
  EXPECT_EQ(format_bytes(1446500000000ull), "1.45 TB");
}

TEST(FormatBytes, FloatingPointFigures) {
  EXPECT_EQ(format_bytes_of(2e9), "2.00 GB");
  EXPECT_EQ(format_bytes_of(1499.6), "1.5 kB");
  EXPECT_EQ(format_bytes_of(0.4), "0 B");
  EXPECT_EQ(format_bytes_of(-5), "0 B");
  EXPECT_EQ(format_bytes_of(std::nan("")), "0 B");
  EXPECT_EQ(format_bytes_of(std::numeric_limits<double>::infinity()), "0 B");
  EXPECT_EQ(format_bytes_of(1e30), format_bytes(std::numeric_limits<uint64_t>::max()));
}

}  // namespace
}  // namespace k3
