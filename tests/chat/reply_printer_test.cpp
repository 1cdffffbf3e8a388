// k3-chat's reply printer at a terminal: the model's text cannot reach the
// terminal as control sequences. Every C0 control but line feed and tab, DEL
// and every C1 control (U+0080..U+009F, also split across pieces) is shown
// visibly; the only escape sequences written are the printer's own dimming
// of the reasoning. Elsewhere the text is written as the model produced it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chat/reply_printer.h"

namespace k3 {
namespace {

std::string print(bool terminal, const std::vector<ReplyPiece>& pieces) {
  ReplyPrinter p(ReplyStyle{terminal, true});
  std::string out = p.format(pieces);  // then finish(): the order matters
  return out + p.finish();
}

// The output with the printer's own dim/reset sequences removed.
std::string without_dimming(std::string s) {
  for (const std::string seq : {"\x1b[2m", "\x1b[0m"})
    for (size_t at; (at = s.find(seq)) != std::string::npos;) s.erase(at, seq.size());
  return s;
}

TEST(ReplyPrinterTest, EveryControlByteIsShownVisiblyAtATerminal) {
  for (int c = 0; c < 0x20; ++c) {
    if (c == '\n' || c == '\t') continue;
    const std::string text = std::string("a") + static_cast<char>(c) + "b";
    for (ReplyChannel ch : {ReplyChannel::kThink, ReplyChannel::kResponse, ReplyChannel::kTools}) {
      const std::string out = without_dimming(print(true, {{ch, text}}));
      for (char o : out) EXPECT_FALSE(static_cast<unsigned char>(o) < 0x20 && o != '\n') << "byte " << c;
      EXPECT_NE(out.find(std::string("a^") + static_cast<char>(c ^ 0x40) + "b"), std::string::npos) << out;
    }
  }
  EXPECT_EQ(print(true, {{ReplyChannel::kResponse, "x\x7fy"}}), "x^?y\n");
  EXPECT_EQ(print(true, {{ReplyChannel::kResponse, "\x1b]0;title\x07\x1b[2J"}}), "^[]0;title^G^[[2J\n");
  EXPECT_EQ(print(true, {{ReplyChannel::kResponse, "line\tone\nline two"}}), "line\tone\nline two\n");
}

TEST(ReplyPrinterTest, C1ControlsAreShownEvenSplitAcrossPieces) {
  // U+009B (CSI) is C2 9B in UTF-8; é (C3 A9) and U+00A0 (C2 A0) are text.
  EXPECT_EQ(print(true, {{ReplyChannel::kResponse,
                          "a\xC2\x9B"
                          "31mb"}}),
            "a<U+009B>31mb\n");
  EXPECT_EQ(print(true, {{ReplyChannel::kResponse, "a\xC2"},
                         {ReplyChannel::kResponse,
                          "\x9B"
                          "31m"}}),
            "a<U+009B>31m\n");
  EXPECT_EQ(print(true, {{ReplyChannel::kResponse, "caf\xC3\xA9\xC2\xA0!"}}), "caf\xC3\xA9\xC2\xA0!\n");
  EXPECT_EQ(print(true, {{ReplyChannel::kResponse, "end\xC2"}}), "end\xC2\n");
}

TEST(ReplyPrinterTest, ReasoningIsStillDimmedAndPipesGetTheTextAsIs) {
  const std::string out = print(true, {{ReplyChannel::kThink, "hm\x1b[31m"}, {ReplyChannel::kResponse, "ok"}});
  EXPECT_EQ(out, "\x1b[2mhm^[[31m\x1b[0m\n\nok\n");
  EXPECT_EQ(print(false, {{ReplyChannel::kResponse, "a\x1b[31mb\xC2\x9B"}}), "a\x1b[31mb\xC2\x9B\n");
}

}  // namespace
}  // namespace k3
