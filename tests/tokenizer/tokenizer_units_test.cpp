// The tokenizer's parts on their own: vocabulary loading and its errors,
// UTF-8 replacement and the streaming decoder at every split point, the two
// byte-pair merge strategies, the 25,000-run whitespace set, special names.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include "common/error.h"
#include "common/file.h"
#include "tokenizer/byte_pair_merge.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace fs = std::filesystem;
using k3::Error;
using k3::ExitCode;
using k3::TokenId;
using k3::Tokenizer;
using k3::Vocabulary;

namespace {

const std::string kTiny = std::string(K3_TEST_DATA) + "/k3-tiny";
const std::string kModel = k3::read_text_file(kTiny + "/tiktoken.model");
const std::string kConfig = k3::read_text_file(kTiny + "/tokenizer_config.json");

const Tokenizer& tok() {
  static const Tokenizer* t = new Tokenizer(Tokenizer::load(kTiny));
  return *t;
}

// The message of the k3::Error that f throws (fails if none or another code).
std::string error_of(const std::function<void()>& f, ExitCode want = ExitCode::kBadModel) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), want) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> v;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t e = s.find('\n', pos);
    v.push_back(s.substr(pos, e - pos));
    pos = e + 1;
  }
  return v;
}
std::string join_lines(const std::vector<std::string>& v) {
  std::string s;
  for (auto& l : v) s += l + "\n";
  return s;
}

TEST(Vocabulary, TinyLayout) {
  const Vocabulary& v = tok().vocab();
  EXPECT_EQ(v.num_ranks(), 8192u);
  EXPECT_EQ(v.size(), 8448u);
  EXPECT_EQ(v.bytes(8192), "[BOS]");
  EXPECT_EQ(v.bytes(8193), "[EOS]");
  EXPECT_EQ(v.bytes(8194), "<|end_of_msg|>");
  EXPECT_EQ(v.bytes(8200), "<|reserved_token_8200|>");
  EXPECT_EQ(v.bytes(8257), "<osagent_mode>");
  EXPECT_EQ(v.bytes(8447), "[PAD]");
  EXPECT_EQ(v.special_id("[EOT]"), 8201u);
  EXPECT_EQ(v.special_id("<|im_end|>"), Vocabulary::kNoToken);
  EXPECT_EQ(v.bos_id(), 8192u);
  EXPECT_EQ(v.eos_id(), 8193u);
  EXPECT_TRUE(v.is_special(8192));
  EXPECT_FALSE(v.is_special(8191));
  // Rank 0 is "!" (GPT-2 byte order), and every line's bytes map back to its rank.
  EXPECT_EQ(v.bytes(0), "!");
  for (TokenId r = 0; r < v.num_ranks(); ++r) ASSERT_EQ(v.rank(v.bytes(r)), r);
  EXPECT_EQ(v.rank(std::string("no such token at all")), Vocabulary::kNoToken);
}

TEST(Vocabulary, SpecialNamesComeFromTheConfig) {
  // Renaming a special in the config renames it everywhere: nothing is built in.
  std::string cfg = kConfig;
  size_t at = cfg.find("\"[EOT]\"");
  ASSERT_NE(at, std::string::npos);
  cfg.replace(at, 7, "\"<|stop|>\"");
  Tokenizer t(Vocabulary::parse(kModel, cfg));
  EXPECT_EQ(t.vocab().bytes(8201), "<|stop|>");
  EXPECT_EQ(t.encode("a<|stop|>"), (std::vector<TokenId>{64, 8201}));
  EXPECT_NE(t.encode("[EOT]"), (std::vector<TokenId>{8201}));
}

TEST(Vocabulary, MalformedFilesNameTheLine) {
  auto lines = lines_of(kModel);
  auto with = [&](size_t i, const std::string& replacement) {
    auto v = lines;
    v[i] = replacement;
    return join_lines(v);
  };
  auto parse = [&](const std::string& model) { return error_of([&] { Vocabulary::parse(model, kConfig); }); };
  EXPECT_NE(parse(with(9, "not-base64! 9")).find("line 10"), std::string::npos);
  EXPECT_NE(parse(with(9, "IQ==")).find("line 10"), std::string::npos);
  EXPECT_NE(parse(with(9, "IQ== nine")).find("line 10"), std::string::npos);
  // Duplicate rank, rank gap, and two ranks with the same bytes.
  std::string dup = parse(with(9, lines[9].substr(0, lines[9].find(' ')) + " 8"));
  EXPECT_NE(dup.find("line 10"), std::string::npos) << dup;
  EXPECT_NE(dup.find("duplicate rank 8"), std::string::npos) << dup;
  std::string gap = parse(with(9, lines[9].substr(0, lines[9].find(' ')) + " 11"));
  EXPECT_NE(gap.find("line 10"), std::string::npos) << gap;
  EXPECT_NE(gap.find("gap"), std::string::npos) << gap;
  std::string same = parse(with(9, lines[3].substr(0, lines[3].find(' ')) + " 9"));
  EXPECT_NE(same.find("line 10"), std::string::npos) << same;
  EXPECT_NE(same.find("rank 3"), std::string::npos) << same;
  // Blank lines are skipped (as the reference does) and lines keep their numbers.
  auto v = lines;
  v.insert(v.begin() + 5, "");
  v[10] = "bad line";
  EXPECT_NE(parse(join_lines(v)).find("line 11"), std::string::npos);
  EXPECT_NO_THROW(Vocabulary::parse("\n" + kModel + "\n\n", kConfig));
  // A missing single byte makes byte-level BPE impossible.
  auto few = lines;
  few.resize(100);
  EXPECT_NE(parse(join_lines(few)).find("single byte"), std::string::npos);
  EXPECT_NE(parse("").find("no tokens"), std::string::npos);
}

TEST(Vocabulary, BadConfig) {
  auto parse = [&](const std::string& cfg) { return error_of([&] { Vocabulary::parse(kModel, cfg); }); };
  EXPECT_NE(parse("{not json").find("JSON"), std::string::npos);
  EXPECT_NE(parse(R"({"added_tokens_decoder": {"5": {"content": "[X]"}}})").find("id 5"), std::string::npos);
  EXPECT_NE(parse(R"({"added_tokens_decoder": {"8448": {"content": "[X]"}}})").find("id 8448"), std::string::npos);
  EXPECT_NE(
      parse(R"({"added_tokens_decoder": {"8192": {"content": "[X]"}, "8193": {"content": "[X]"}}})").find("\"[X]\""),
      std::string::npos);
  EXPECT_NE(parse(R"({"added_tokens_decoder": {}, "bos_token": "[NOPE]"})").find("[NOPE]"), std::string::npos);
  // Without names every special is reserved; bos/eos may be absent or objects.
  Vocabulary v = Vocabulary::parse(kModel, R"({"bos_token": {"content": "<|reserved_token_8192|>"}, "eos_token": null,
                                               "model_max_length": 1000000000000000019884624838656})");
  EXPECT_EQ(v.bytes(8192), "<|reserved_token_8192|>");
  EXPECT_EQ(v.bos_id(), 8192u);
  EXPECT_EQ(v.eos_id(), Vocabulary::kNoToken);
}

TEST(Vocabulary, MissingDirectory) {
  std::string msg = error_of([] { Vocabulary::load("/nonexistent/k3-tok"); });
  EXPECT_NE(msg.find("/nonexistent/k3-tok"), std::string::npos);
}

// --- UTF-8 -----------------------------------------------------------------

TEST(Utf8, MaximalSubparts) {
  using k3::utf8::replace_invalid;
  const std::string R = "\xEF\xBF\xBD";
  EXPECT_EQ(replace_invalid("abc"), "abc");
  EXPECT_EQ(replace_invalid("\x80"), R);
  EXPECT_EQ(replace_invalid("\xE4\xB8"), R);  // truncated: one
  EXPECT_EQ(replace_invalid("\xE4\xB8x"), R + "x");
  EXPECT_EQ(replace_invalid("\xC0\x80"), R + R);          // overlong: lead starts nothing
  EXPECT_EQ(replace_invalid("\xE0\x80\x80"), R + R + R);  // E0 needs A0..BF next
  EXPECT_EQ(replace_invalid("\xED\xA0\x80"), R + R + R);  // surrogate
  EXPECT_EQ(replace_invalid("\xF4\x90\x80\x80"), R + R + R + R);
  EXPECT_EQ(replace_invalid("\xF0\x9F\x98"), R);  // 3 of 4
  EXPECT_EQ(replace_invalid("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
  EXPECT_EQ(replace_invalid("\xF1\x80\x41"), R + "A");
  EXPECT_EQ(replace_invalid("\xFF\xFE"), R + R);
  EXPECT_EQ(k3::utf8::find_invalid("ok \xE4\xB8"), 3u);
  EXPECT_EQ(k3::utf8::find_invalid("12345678\xC3\xA9 \xFF"), 11u);
  EXPECT_EQ(k3::utf8::find_invalid("\xC3\xA9"), k3::utf8::kNotFound);
}

TEST(StreamDecoder, EverySplitEqualsWholeDecode) {
  // Random byte soup (valid and invalid pieces) cut at random points: the
  // streamed text always equals the whole-buffer replacement.
  std::mt19937 rng(7);
  const std::vector<std::string> atoms = {"a",        "\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80", "\x80",
                                          "\xE4\xB8", "\xF0\x9F", "\xFF",         "\xED\xA0\x80",     "\xC0",
                                          " ",        "\xF4\x90"};
  for (int iter = 0; iter < 2000; ++iter) {
    std::string s;
    int n = 1 + rng() % 12;
    for (int i = 0; i < n; ++i) s += atoms[rng() % atoms.size()];
    k3::StreamDecoder d;
    std::string out;
    size_t pos = 0;
    while (pos < s.size()) {
      size_t take = 1 + rng() % 4;
      take = std::min(take, s.size() - pos);
      d.push(std::string_view(s).substr(pos, take), out);
      pos += take;
      EXPECT_LE(d.pending(), 3u);
    }
    d.finish(out);
    ASSERT_EQ(out, k3::utf8::replace_invalid(s)) << "iteration " << iter;
  }
}

// --- byte-pair merge ---------------------------------------------------------

TEST(BytePairMerge, HeapAndScanAgree) {
  const Vocabulary& v = tok().vocab();
  std::mt19937 rng(11);
  const std::string alphabet = "aaabbbeeinorst  ,.'\xE4\xB8\xAD\xE6\x96\x87";
  for (int iter = 0; iter < 3000; ++iter) {
    size_t n = 2 + rng() % 300;
    std::string s;
    for (size_t i = 0; i < n; ++i) s.push_back(alphabet[rng() % alphabet.size()]);
    auto p = reinterpret_cast<const uint8_t*>(s.data());
    std::vector<TokenId> a, b;
    k3::byte_pair_merge_scan(v, p, s.size(), a);
    k3::byte_pair_merge_heap(v, p, s.size(), b);
    ASSERT_EQ(a, b) << s;
    std::string back;
    for (TokenId id : a) back += v.bytes(id);
    ASSERT_EQ(back, s);
  }
}

TEST(BytePairMerge, LowestRankFirst) {
  // "hello": merges follow ranks, not left-to-right greed; the reference
  // vectors pin " hello world" -> 273 680 78 2375 in the fuller pipeline.
  const Vocabulary& v = tok().vocab();
  std::vector<TokenId> ids;
  std::string s = "hello";
  k3::byte_pair_merge(v, reinterpret_cast<const uint8_t*>(s.data()), s.size(), ids);
  std::string back;
  for (TokenId id : ids) back += v.bytes(id);
  EXPECT_EQ(back, s);
  // Every id must be a token whose bytes could not merge further with its neighbour.
  for (size_t i = 0; i + 1 < ids.size(); ++i)
    EXPECT_EQ(v.rank(std::string(v.bytes(ids[i])) + std::string(v.bytes(ids[i + 1]))), Vocabulary::kNoToken);
}

// --- the 25,000-run whitespace set ------------------------------------------

TEST(PythonSpace, MatchesTheReferenceSet) {
  // Exactly CPython's str.isspace() set (tests/data/tokenizer/README.md).
  auto expected = [](char32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
  };
  for (char32_t c = 0; c <= 0x10FFFF; ++c) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    ASSERT_EQ(k3::is_python_space(c), expected(c)) << std::hex << uint32_t(c);
  }
}

// --- specials and the cuts ---------------------------------------------------

TEST(Encode, SpecialCutByTheRunSplitIsText) {
  // 24,998 'a' then "[EOS]": the run of non-space reaches 25,000 inside the
  // name, so the name is cut and encoded as text; one 'a' less keeps it whole.
  std::string cut = std::string(24998, 'a') + "[EOS]";
  std::string whole = std::string(24995, 'a') + "[EOS]";
  auto ids_cut = tok().encode(cut);
  auto ids_whole = tok().encode(whole);
  EXPECT_EQ(ids_whole.back(), 8193u);
  EXPECT_EQ(std::count(ids_cut.begin(), ids_cut.end(), 8193u), 0);
  EXPECT_EQ(tok().decode_bytes(ids_cut), cut);
}

TEST(Encode, InvalidUtf8AndBadIds) {
  std::string msg = error_of([] { tok().encode("ab\xFF"); }, ExitCode::kBadInput);
  EXPECT_NE(msg.find("byte offset 2"), std::string::npos);
  msg = error_of([] { tok().decode_bytes({1, 2, 9000}); }, ExitCode::kBadInput);
  EXPECT_NE(msg.find("9000"), std::string::npos);
  EXPECT_NE(msg.find("position 3"), std::string::npos);
}

TEST(Encode, NoSpecialsTreatsNamesAsText) {
  EXPECT_EQ(tok().encode("[BOS]", true), (std::vector<TokenId>{8192}));
  auto plain = tok().encode("[BOS]", false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 8192u), 0);
  EXPECT_EQ(tok().decode_bytes(plain), "[BOS]");
}

}  // namespace
