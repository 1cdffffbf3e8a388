// The tokenizer against the golden vectors of tests/data/tokenizer/ (made by
// the reference tiktoken core with the Kimi pipeline; see its README.md):
// encode with and without specials, the regex pre-split alone, decode, the
// round trip, and the streaming decoder fed one id at a time.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <simdjson.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/file.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

using k3::TokenId;
using k3::Tokenizer;

namespace {

const std::string kData = std::string(K3_TEST_DATA) + "/tokenizer/";
const std::string kTiny = std::string(K3_TEST_DATA) + "/k3-tiny";

const Tokenizer& tok() {
  static const Tokenizer* t = new Tokenizer(Tokenizer::load(kTiny));
  return *t;
}

struct Case {
  std::string name, text;
  std::vector<TokenId> ids;
  std::vector<std::string> pieces;
  std::string bytes_hex;
  // Generator-described cases (too big to store):
  bool generated = false;
  std::string text_sha256, ids_sha256;
  uint64_t n_ids = 0, n_codepoints = 0;
  std::vector<TokenId> ids_head, ids_tail;
  // Ids around each piece boundary of the reference: {first index, ids}.
  std::vector<std::pair<uint64_t, std::vector<TokenId>>> windows;
};

std::vector<TokenId> id_array(simdjson::dom::element e) {
  std::vector<TokenId> v;
  for (auto x : e.get_array()) v.push_back(static_cast<TokenId>(uint64_t(x)));
  return v;
}

std::vector<Case> load_cases(const std::string& file) {
  std::string text = k3::read_text_file(kData + file);
  std::vector<Case> out;
  simdjson::dom::parser parser;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.empty()) continue;
    simdjson::dom::element o = parser.parse(line);
    Case c;
    c.name = std::string(std::string_view(o["name"]));
    std::string_view s;
    if (o["text"].get_string().get(s) == simdjson::SUCCESS) c.text = std::string(s);
    simdjson::dom::element e;
    if (o["ids"].get(e) == simdjson::SUCCESS) c.ids = id_array(e);
    if (o["pieces"].get(e) == simdjson::SUCCESS)
      for (auto x : e.get_array()) c.pieces.emplace_back(std::string_view(x));
    if (o["bytes_hex"].get_string().get(s) == simdjson::SUCCESS) c.bytes_hex = std::string(s);
    if (o["generator"].get(e) == simdjson::SUCCESS) {
      c.generated = true;
      EXPECT_EQ(std::string_view(e["type"]), "concat_repeat") << c.name;
      for (auto part : e["parts"].get_array()) {
        std::string_view piece = part["s"];
        uint64_t count = part["n"];
        for (uint64_t i = 0; i < count; ++i) c.text.append(piece);
      }
      c.text_sha256 = std::string(std::string_view(o["text_sha256"]));
      c.ids_sha256 = std::string(std::string_view(o["ids_sha256"]));
      c.n_ids = o["n_ids"];
      c.n_codepoints = o["n_codepoints"];
      c.ids_head = id_array(o["ids_head"]);
      c.ids_tail = id_array(o["ids_tail"]);
      if (o["windows"].get(e) == simdjson::SUCCESS)
        for (auto w : e.get_array()) c.windows.emplace_back(uint64_t(w["at"]), id_array(w["ids"]));
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::string sha256_hex(const void* data, size_t n) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EXPECT_EQ(EVP_Digest(data, n, md, &len, EVP_sha256(), nullptr), 1);
  std::string hex;
  char b[3];
  for (unsigned i = 0; i < len; ++i) {
    std::snprintf(b, sizeof b, "%02x", md[i]);
    hex += b;
  }
  return hex;
}

std::string ids_sha256(const std::vector<TokenId>& ids) {
  std::string le;
  for (TokenId id : ids)
    for (int k = 0; k < 4; ++k) le.push_back(static_cast<char>((id >> (8 * k)) & 0xFF));
  return sha256_hex(le.data(), le.size());
}

std::string hex_of(std::string_view s) {
  std::string h;
  char b[3];
  for (unsigned char c : s) {
    std::snprintf(b, sizeof b, "%02x", c);
    h += b;
  }
  return h;
}

size_t count_code_points(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Streams ids one at a time through StreamDecoder, as k3-detok does.
std::string stream_decode(const std::vector<TokenId>& ids) {
  k3::StreamDecoder d;
  std::string out;
  for (TokenId id : ids) d.push(tok().vocab().bytes(id), out);
  d.finish(out);
  return out;
}

void check_encode_case(const Case& c, bool allow_special) {
  SCOPED_TRACE(c.name);
  std::vector<TokenId> ids = tok().encode(c.text, allow_special);
  if (c.generated) {
    ASSERT_EQ(sha256_hex(c.text.data(), c.text.size()), c.text_sha256) << "generator expanded wrongly";
    ASSERT_EQ(count_code_points(c.text), c.n_codepoints);
    ASSERT_EQ(ids.size(), c.n_ids);
    EXPECT_EQ(std::vector<TokenId>(ids.begin(), ids.begin() + c.ids_head.size()), c.ids_head);
    EXPECT_EQ(std::vector<TokenId>(ids.end() - c.ids_tail.size(), ids.end()), c.ids_tail);
    EXPECT_EQ(ids_sha256(ids), c.ids_sha256);
    for (const auto& [at, want] : c.windows) {
      ASSERT_LE(at + want.size(), ids.size());
      EXPECT_EQ(std::vector<TokenId>(ids.begin() + at, ids.begin() + at + want.size()), want)
          << "ids around the piece boundary near id " << at;
    }
  } else {
    EXPECT_EQ(ids, c.ids);
  }
  // Round trip: every case is valid UTF-8, so decoding gives the text back.
  std::string bytes = tok().decode_bytes(ids);
  EXPECT_TRUE(bytes == c.text) << "decode(encode(x)) != x";
  EXPECT_TRUE(tok().decode(ids) == c.text);
  EXPECT_TRUE(stream_decode(ids) == c.text) << "streaming decode differs";
}

TEST(TokenizerVectors, EncodeWithSpecials) {
  auto cases = load_cases("cases.jsonl");
  ASSERT_EQ(cases.size(), 250u);
  size_t generated = 0;
  for (const Case& c : cases) {
    generated += c.generated;
    check_encode_case(c, true);
  }
  EXPECT_EQ(generated, 4u);
}

// The cuts before the regex (400,000-code-point chunks, 25,000-long runs, the
// run counter restarting at each chunk), each case named for the rule it
// pins; made by make_chunk_cases.sh.
TEST(TokenizerVectors, ChunkAndRunCuts) {
  auto cases = load_cases("chunk_cases.jsonl");
  ASSERT_EQ(cases.size(), 16u);
  for (const Case& c : cases) {
    ASSERT_TRUE(c.generated) << c.name;
    ASSERT_FALSE(c.windows.empty() && c.name.rfind("chunk/", 0) == 0) << c.name << ": no boundary window";
    check_encode_case(c, true);
  }
}

TEST(TokenizerVectors, EncodeSpecialsAsText) {
  auto cases = load_cases("cases_no_special.jsonl");
  ASSERT_EQ(cases.size(), 24u);
  for (const Case& c : cases) check_encode_case(c, false);
}

TEST(TokenizerVectors, PreSplit) {
  auto cases = load_cases("pretok_cases.jsonl");
  ASSERT_EQ(cases.size(), 218u);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> got;
    for (auto p : tok().pre_split(c.text)) got.emplace_back(p);
    EXPECT_EQ(got, c.pieces);
  }
}

TEST(TokenizerVectors, Decode) {
  auto cases = load_cases("decode_cases.jsonl");
  ASSERT_EQ(cases.size(), 73u);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string bytes = tok().decode_bytes(c.ids);
    EXPECT_EQ(hex_of(bytes), c.bytes_hex);
    EXPECT_TRUE(tok().decode(c.ids) == c.text) << "replacement text differs";
    EXPECT_TRUE(stream_decode(c.ids) == c.text) << "streaming decode differs";
  }
}

}  // namespace
