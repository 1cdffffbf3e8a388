// Writing token ids as text: both layouts byte for byte, the widest ids, and
// that what is written reads back through the shared reader unchanged.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "cli/token_id_reader.h"
#include "cli/token_id_writer.h"

namespace k3 {
namespace {

TEST(TokenIdWriter, OnePerLine) {
  EXPECT_EQ(format_token_ids(std::vector<uint32_t>{5, 0, 163839}, TokenIdLayout::kOnePerLine), "5\n0\n163839\n");
  EXPECT_EQ(format_token_ids(std::vector<uint32_t>{}, TokenIdLayout::kOnePerLine), "");
}

TEST(TokenIdWriter, OneLine) {
  EXPECT_EQ(format_token_ids(std::vector<int32_t>{5, 0, 163839}, TokenIdLayout::kOneLine), "5 0 163839\n");
  // An empty sequence is still a line, so line counts match sequence counts.
  EXPECT_EQ(format_token_ids(std::vector<int32_t>{}, TokenIdLayout::kOneLine), "\n");
}

TEST(TokenIdWriter, WidestIdsFit) {
  const uint32_t u = std::numeric_limits<uint32_t>::max();
  EXPECT_EQ(format_token_ids(std::vector<uint32_t>{u, u}, TokenIdLayout::kOneLine), "4294967295 4294967295\n");
  const int32_t lo = std::numeric_limits<int32_t>::min();
  EXPECT_EQ(format_token_ids(std::vector<int32_t>{lo, lo}, TokenIdLayout::kOnePerLine), "-2147483648\n-2147483648\n");
}

TEST(TokenIdWriter, ReadsBack) {
  std::vector<int32_t> ids;
  for (int32_t i = 0; i < 5000; ++i) ids.push_back(i * 7919 % 200003);
  EXPECT_EQ(parse_token_ids(format_token_ids(ids, TokenIdLayout::kOnePerLine), "ids", 0), ids);
  EXPECT_EQ(parse_token_id_lines(format_token_ids(ids, TokenIdLayout::kOneLine), "ids", 0),
            (std::vector<std::vector<int32_t>>{ids}));
}

}  // namespace
}  // namespace k3
