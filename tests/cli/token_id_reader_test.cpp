// Parsing prompt ids: whitespace of any kind, and every malformed word.
#include <gtest/gtest.h>

#include "cli/token_id_reader.h"
#include "common/error.h"

namespace k3 {
namespace {

std::string error_of(const std::string& text, int64_t vocab) {
  try {
    parse_token_ids(text, "stdin", vocab);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    return e.what();
  }
  return "";
}

TEST(TokenIdReader, AnyWhitespaceSeparates) {
  EXPECT_EQ(parse_token_ids(" 1\t22\n333\r\n 0 \n", "stdin", 1000), (std::vector<int32_t>{1, 22, 333, 0}));
  EXPECT_TRUE(parse_token_ids(" \n\t", "stdin", 1000).empty());
  EXPECT_EQ(parse_token_ids("007", "stdin", 1000), (std::vector<int32_t>{7}));
}

TEST(TokenIdReader, MalformedWordsNameThePosition) {
  EXPECT_NE(error_of("1 2 x3", 100).find("token 3 'x3' is not a token id"), std::string::npos);
  EXPECT_NE(error_of("12abc", 100).find("'12abc'"), std::string::npos);
  EXPECT_NE(error_of("-1", 100).find("'-1'"), std::string::npos);
  EXPECT_NE(error_of("+1", 100).find("'+1'"), std::string::npos);
  EXPECT_NE(error_of("1.5", 100).find("'1.5'"), std::string::npos);
  EXPECT_NE(error_of("5 100", 100).find("token 2 is id 100, outside the vocabulary 0..99"), std::string::npos);
  EXPECT_NE(error_of("99999999999999999999", 100).find("outside the vocabulary"), std::string::npos);
  EXPECT_NE(error_of("99999999999999999999999", 100).find("longer than 20 characters"), std::string::npos);
  EXPECT_NE(error_of("4294967296", 0).find("outside"), std::string::npos);
  const std::string bin = error_of(std::string("1 \x01\x02", 4), 100);
  EXPECT_NE(bin.find("'?"
                     "?'"),
            std::string::npos)
      << bin;
}

TEST(TokenIdReader, IdsSplitAcrossPiecesArriveWhenComplete) {
  TokenIdReader reader("stdin", 1000);
  std::vector<int32_t> got;
  auto add = [&](int32_t id) { got.push_back(id); };
  reader.push("12 3", add);
  EXPECT_EQ(got, (std::vector<int32_t>{12}));  // "3" may continue
  reader.push("4\n5", add);
  EXPECT_EQ(got, (std::vector<int32_t>{12, 34}));
  reader.finish(add);
  EXPECT_EQ(got, (std::vector<int32_t>{12, 34, 5}));
  EXPECT_EQ(reader.count(), 3u);
  TokenIdReader bad("stdin", 10);
  bad.push("1 2 ", add);
  EXPECT_THROW(bad.push("1x ", add), Error);
}

TEST(TokenIdReader, LinesKeepTheirOrderAndNameTheLine) {
  EXPECT_EQ(parse_token_id_lines("1 2\n\n3\n4 5 6", "f", 10),
            (std::vector<std::vector<int32_t>>{{1, 2}, {}, {3}, {4, 5, 6}}));
  EXPECT_TRUE(parse_token_id_lines("", "f", 10).empty());
  try {
    parse_token_id_lines("1\n2 x\n", "f", 10);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("f line 2: token 2 'x'"), std::string::npos) << e.what();
  }
}

}  // namespace
TEST(TokenIdReader, InputWithoutWhitespaceFailsAtOnce) {
  // /dev/zero or an endless digit run: the error comes after at most 21
  // bytes of the word, not after the whole input has been held in memory.
  for (char fill : {'\0', '1', 'x'}) {
    TokenIdReader reader("stdin", 1000);
    const std::string chunk(1 << 16, fill);
    size_t pushed = 0;
    try {
      for (int i = 0; i < 1000; ++i) {
        reader.push(chunk, [](int32_t) {});
        pushed += chunk.size();
      }
      ADD_FAILURE() << "64 MB without whitespace was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      EXPECT_EQ(pushed, 0u) << "failed only after " << pushed << " bytes";
    }
  }
}

}  // namespace k3
