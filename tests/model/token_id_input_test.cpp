// Parsing prompt ids: whitespace of any kind, and every malformed word.
#include <gtest/gtest.h>

#include "common/error.h"
#include "model/token_id_input.h"

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

TEST(TokenIdInput, AnyWhitespaceSeparates) {
  EXPECT_EQ(parse_token_ids(" 1\t22\n333\r\n 0 \n", "stdin", 1000), (std::vector<int32_t>{1, 22, 333, 0}));
  EXPECT_TRUE(parse_token_ids(" \n\t", "stdin", 1000).empty());
  EXPECT_EQ(parse_token_ids("007", "stdin", 1000), (std::vector<int32_t>{7}));
}

TEST(TokenIdInput, MalformedWordsNameThePosition) {
  EXPECT_NE(error_of("1 2 x3", 100).find("token 3 'x3' is not a token id"), std::string::npos);
  EXPECT_NE(error_of("12abc", 100).find("'12abc'"), std::string::npos);
  EXPECT_NE(error_of("-1", 100).find("'-1'"), std::string::npos);
  EXPECT_NE(error_of("+1", 100).find("'+1'"), std::string::npos);
  EXPECT_NE(error_of("1.5", 100).find("'1.5'"), std::string::npos);
  EXPECT_NE(error_of("5 100", 100).find("token 2 is id 100, outside the vocabulary 0..99"), std::string::npos);
  EXPECT_NE(error_of("99999999999999999999999", 100).find("outside the vocabulary"), std::string::npos);
  EXPECT_NE(error_of("4294967296", 0).find("outside"), std::string::npos);
  const std::string bin = error_of(std::string("1 \x01\x02", 4), 100);
  EXPECT_NE(bin.find("'?" "?'"), std::string::npos) << bin;
}

}  // namespace
}  // namespace k3
