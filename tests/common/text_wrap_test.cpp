#include "common/text_wrap.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace k3 {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(WrapWords, GreedyLinesWithIndent) {
  EXPECT_EQ("one two\n  three\n  four\n", wrap_words("one two three four", 10, 2));
  EXPECT_EQ("one two three four\n", wrap_words("one  two\nthree four", 80, 2));
  EXPECT_EQ("", wrap_words("  \n ", 10, 2));
}

TEST(WrapWords, ALineExactlyTheWidthIsKept) {
  EXPECT_EQ("abcd efgh\nij\n", wrap_words("abcd efgh ij", 9));
  EXPECT_EQ("abcd\nefgh\n", wrap_words("abcd efgh", 8));
}

TEST(WrapWords, ALongWordStandsAlone) { EXPECT_EQ("a\n  abcdefghijkl\n  b\n", wrap_words("a abcdefghijkl b", 6, 2)); }

TEST(WrapWords, EveryLineFitsAndNoneCouldTakeTheNextWord) {
  const std::string text =
      "commands: /reset (new conversation; the old history is kept as a copy), /retry (a new reply to the last "
      "message), /undo (drop the last exchange), /save FILE (write the conversation as JSONL)";
  for (size_t width : {20, 40, 60, 120}) {
    const std::vector<std::string> lines = lines_of(wrap_words(text, width, 2));
    std::string joined;
    for (size_t i = 0; i < lines.size(); ++i) {
      EXPECT_LE(lines[i].size(), width) << lines[i];
      const std::string words = lines[i].substr(lines[i].find_first_not_of(' '));
      joined += (i ? " " : "") + words;
      if (i + 1 < lines.size()) {
        const std::string next = lines[i + 1].substr(2, lines[i + 1].find(' ', 2) - 2);
        EXPECT_GT(lines[i].size() + 1 + next.size(), width) << "line " << i << " could take \"" << next << "\"";
      }
    }
    EXPECT_EQ(text, joined);
  }
}

}  // namespace
}  // namespace k3
