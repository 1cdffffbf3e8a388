// The chat renderer with a vocabulary of K3's full size: 163,584 ranks and
// the 256 specials at 163584.. named by a tokenizer_config.json written like
// K3's (the k3-tiny names moved to the new offset). The ranks are k3-tiny's
// 8,192 followed by merges of earlier tokens (each new token the bytes of two
// earlier ones, as BPE training makes them), generated here so the test needs
// nothing from outside the repository. The expected ids of this vocabulary
// are unknown, so the test asserts what must hold for any vocabulary: the
// segments of every case, markup segments as exactly their one special id,
// text segments (including special spellings written in content) as
// ordinary ids only that decode back to the text.
#include <gtest/gtest.h>

#include <string>
#include <unordered_set>
#include <vector>

#include "chat/chat_request.h"
#include "chat/xtml_renderer.h"
#include "chat_cases.h"
#include "common/file.h"
#include "tokenizer/tokenizer.h"

namespace {

constexpr uint32_t kK3Ranks = 163584;

std::string base64(std::string_view bytes) {
  static const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t w = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    out += {a[w >> 18], a[(w >> 12) & 63], a[(w >> 6) & 63], a[w & 63]};
  }
  if (bytes.size() - i == 1) {
    uint32_t w = uint8_t(bytes[i]) << 16;
    out += {a[w >> 18], a[(w >> 12) & 63], '=', '='};
  } else if (bytes.size() - i == 2) {
    uint32_t w = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8);
    out += {a[w >> 18], a[(w >> 12) & 63], a[(w >> 6) & 63], '='};
  }
  return out;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

const k3::Tokenizer& full_size() {
  static const k3::Tokenizer* t = [] {
    const k3::Vocabulary tiny = k3::Vocabulary::load(std::string(K3_TEST_DATA) + "/k3-tiny");
    std::vector<std::string> tokens;
    std::unordered_set<std::string> seen;
    for (uint32_t r = 0; r < tiny.num_ranks(); ++r) {
      tokens.emplace_back(tiny.bytes(r));
      seen.insert(tokens.back());
    }
    uint64_t x = 0x9E3779B97F4A7C15ull;  // fixed LCG: the same vocabulary every run
    while (tokens.size() < kK3Ranks) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      const size_t a = (x >> 33) % tokens.size(), b = (x >> 13) % tokens.size();
      std::string merged = tokens[a] + tokens[b];
      if (merged.size() > 24 || !seen.insert(merged).second) continue;
      tokens.push_back(std::move(merged));
    }
    std::string model;
    for (size_t r = 0; r < tokens.size(); ++r) model += base64(tokens[r]) + " " + std::to_string(r) + "\n";
    std::string config = "{\"added_tokens_decoder\": {";
    bool first = true;
    for (uint32_t i = 0; i < k3::Vocabulary::kNumSpecialTokens; ++i) {
      const std::string& name = tiny.special_names()[i];
      if (name.rfind("<|reserved_token_", 0) == 0) continue;  // unnamed: numbered by the new offset
      config += (first ? "" : ", ") + std::string("\"") + std::to_string(kK3Ranks + i) +
                "\": {\"content\": " + json_string(name) + ", \"special\": true}";
      first = false;
    }
    config += "}, \"bos_token\": \"[BOS]\", \"eos_token\": \"[EOS]\"}";
    return new k3::Tokenizer(k3::Vocabulary::parse(model, config));
  }();
  return *t;
}

TEST(XtmlFullVocabulary, HasK3Size) {
  EXPECT_EQ(full_size().vocab().num_ranks(), kK3Ranks);
  EXPECT_EQ(full_size().vocab().size(), 163840u);
  EXPECT_EQ(full_size().vocab().special_id("<|end_of_msg|>"), 163586u);
  EXPECT_EQ(full_size().vocab().eos_id(), 163585u);
}

TEST(XtmlFullVocabulary, SegmentsAndSpecialIdsOnlyFromMarkup) {
  const k3::Tokenizer& tok = full_size();
  size_t text_with_spellings = 0;
  for (const auto& c : k3::test::load_chat_cases()) {
    SCOPED_TRACE(c.name);
    const k3::RenderedChat r = k3::render_chat(k3::parse_chat_request(c.request));
    ASSERT_EQ(r.segments, c.segments);
    std::vector<k3::TokenId> all;
    k3::encode_segments(tok, r.segments, all);
    std::vector<k3::TokenId> joined;
    for (const k3::Segment& s : r.segments) {
      std::vector<k3::TokenId> ids;
      k3::encode_segments(tok, {s}, ids);
      if (s.markup) {
        ASSERT_EQ(ids.size(), 1u) << s.text;
        EXPECT_EQ(ids[0], tok.vocab().special_id(s.text));
        EXPECT_GE(ids[0], kK3Ranks);
      } else {
        for (k3::TokenId id : ids) EXPECT_LT(id, kK3Ranks) << "special id in text segment \"" << s.text << "\"";
        EXPECT_EQ(tok.decode(ids), s.text);
        if (s.text.find("<|") != std::string::npos || s.text.find("[EOS]") != std::string::npos) ++text_with_spellings;
      }
      joined.insert(joined.end(), ids.begin(), ids.end());
    }
    EXPECT_EQ(all, joined);
  }
  EXPECT_GE(text_with_spellings, 1u);  // the case that writes <|open|>, [EOS] ... in content
}

}  // namespace
