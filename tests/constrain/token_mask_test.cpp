// The masks over a vocabulary: the trie walk (with its plain-text shortcut
// inside strings) against checking every id on its own; random outputs that
// follow the masks parse and validate (an independent validator); the
// program around the value (free, forced, json, end steps); the sampler
// never leaves the mask; and what a mask costs on a K3-size vocabulary.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "constrain/json_schema_compiler.h"
#include "constrain/output_constraint.h"
#include "constrain/schema_validator.h"
#include "sampling/sampler.h"
#include "synth/synth_tokenizer.h"
#include "tokenizer/vocabulary.h"

namespace k3 {
namespace {

Vocabulary synth_vocab(int ordinary, uint64_t seed) {
  return Vocabulary::parse(synth_tiktoken_model(ordinary, seed), synth_tokenizer_config_json(ordinary + 256));
}

// Some text ids with multi-byte UTF-8, quotes and escapes the synthetic
// vocabulary lacks, added after its ids (so brute force sees them too).
struct TestVocab {
  Vocabulary vocab;
  std::vector<std::string> extra = {"\xC3\xA9",
                                    "\xE4\xB8\xAD\xE6\x96\x87",
                                    "\xF0\x9F\x98\x80",
                                    "\xC3",
                                    "\xA9\"",
                                    "\\u00e9",
                                    "\\\"",
                                    "\":",
                                    "\",\"",
                                    "{\"",
                                    "\"}",
                                    "\n  ",
                                    "\\",
                                    "u12",
                                    "e+5",
                                    "truefalse",
                                    "null,",
                                    "\"name\":\"",
                                    "]}",
                                    "\xED\xA0\x80"};
  std::vector<std::string_view> bytes;
  std::vector<bool> text;
  std::unique_ptr<VocabularyTrie> trie;
  explicit TestVocab(int ordinary) : vocab(synth_vocab(ordinary, 7)) {
    for (TokenId id = 0; id < vocab.size(); ++id) {
      bytes.push_back(vocab.bytes(id));
      text.push_back(!vocab.is_special(id));
    }
    for (const std::string& e : extra) {
      bytes.push_back(e);
      text.push_back(true);
    }
    // Extra ids that repeat an existing token's bytes would make the trie refuse: drop those.
    std::vector<std::string_view> seen;
    for (size_t i = vocab.size(); i < bytes.size(); ++i)
      if (vocab.rank(bytes[i]) != Vocabulary::kNoToken) text[i] = false;
    trie = std::make_unique<VocabularyTrie>(bytes, text);
  }
};

const char* kSchemas[] = {
    R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"tags":{"type":"array","items":{"type":"string","enum":["a","b","c"]}}},"required":["name","age","tags"],"additionalProperties":false})",
    R"({"type":"object","properties":{"x":{"type":["number","null"]},"y":{"anyOf":[{"type":"boolean"},{"type":"string","maxLength":4}]}},"required":["x","y"],"additionalProperties":false})",
    R"({"$defs":{"t":{"type":"object","properties":{"v":{"type":"integer"},"k":{"type":"array","maxItems":2,"items":{"$ref":"#/$defs/t"}}},"required":["v","k"],"additionalProperties":false}},"$ref":"#/$defs/t"})",
    R"({"type":"object"})",
    R"({"type":"array","items":{"const":"\u00e9\"q"},"minItems":1,"maxItems":2})",
};

// Every id checked on its own: allowed exactly when it is text and the
// state accepts all its bytes.
TokenMask brute_force(const JsonTokenState& s, const TestVocab& v) {
  TokenMask m(static_cast<int64_t>(v.bytes.size()));
  for (size_t id = 0; id < v.bytes.size(); ++id)
    if (v.text[id] && s.accepts(v.bytes[id])) m.allow(static_cast<int64_t>(id));
  return m;
}

TEST(TokenMask, TrieWalkEqualsCheckingEveryIdAndOutputsValidate) {
  const TestVocab v(3000);
  std::mt19937_64 rng(11);
  int documents = 0;
  for (const char* text : kSchemas) {
    JsonValue schema;
    std::string error;
    ASSERT_TRUE(parse_json(text, schema, error)) << error;
    auto g = std::make_shared<JsonGrammar>(compile_json_schema(schema));
    for (int run = 0; run < 6; ++run) {
      JsonTokenState s(g, *v.trie);
      std::string out;
      for (int step = 0; step < 400; ++step) {
        TokenMask m(static_cast<int64_t>(v.bytes.size()));
        s.allowed(m);
        const TokenMask want = brute_force(s, v);
        for (size_t id = 0; id < v.bytes.size(); ++id)
          ASSERT_EQ(m.allowed(static_cast<int64_t>(id)), want.allowed(static_cast<int64_t>(id)))
              << "id " << id << " bytes '" << v.bytes[id] << "' after '" << out << "' (schema " << text << ")";
        if (s.complete() && (m.count() == 0 || rng() % 3 == 0)) break;
        ASSERT_GT(m.count(), 0) << "no id can continue '" << out << "'";
        // Pick among the allowed ids, half the time among those that are not plain text (they close things).
        std::vector<int32_t> ids, closing;
        for (size_t id = 0; id < v.bytes.size(); ++id)
          if (m.allowed(static_cast<int64_t>(id))) {
            ids.push_back(static_cast<int32_t>(id));
            if (!v.trie->plain().allowed(static_cast<int64_t>(id))) closing.push_back(static_cast<int32_t>(id));
          }
        const std::vector<int32_t>& from = (!closing.empty() && rng() % 2) ? closing : ids;
        const int32_t id = from[rng() % from.size()];
        ASSERT_TRUE(s.accept(v.bytes[static_cast<size_t>(id)]));
        out += v.bytes[static_cast<size_t>(id)];
      }
      if (!s.complete()) continue;  // cut by the step limit: nothing to validate
      ++documents;
      JsonValue value;
      ASSERT_TRUE(parse_json(out, value, error)) << out << ": " << error;
      EXPECT_TRUE(test::validates(value, schema, schema)) << out << " against " << text;
    }
  }
  EXPECT_GE(documents, 15);
}

TEST(TokenMask, SpecialIdsAreNeverText) {
  const TestVocab v(1000);
  auto g = std::make_shared<JsonGrammar>(json_object_grammar());
  JsonTokenState s(g, *v.trie);
  ASSERT_TRUE(s.accept("{\"a\":\""));  // inside a string: the plain-text shortcut
  TokenMask m(static_cast<int64_t>(v.bytes.size()));
  s.allowed(m);
  for (TokenId id = v.vocab.num_ranks(); id < v.vocab.size(); ++id) EXPECT_FALSE(m.allowed(id)) << id;
  EXPECT_TRUE(m.allowed(v.vocab.rank("a")));
  EXPECT_FALSE(m.allowed(v.vocab.rank("\n")));
}

std::vector<int32_t> ids_of(const Vocabulary& v, std::initializer_list<const char*> texts) {
  std::vector<int32_t> out;
  for (const char* t : texts) out.push_back(static_cast<int32_t>(v.rank(t)));
  return out;
}

TEST(OutputConstraint, StepsInOrderAndFailsClosed) {
  const TestVocab v(1000);
  const int32_t close = static_cast<int32_t>(v.vocab.special_id("<|close|>"));
  const int32_t eos = static_cast<int32_t>(v.vocab.special_id("<|end_of_msg|>"));
  const std::vector<int32_t> tail = ids_of(v.vocab, {"x", "y"});
  auto g = std::make_shared<JsonGrammar>(compile_json_schema_text(R"({"type":"integer"})"));
  std::vector<ConstraintStep> steps;
  steps.push_back(ConstraintStep::free({eos}, close));
  steps.push_back(ConstraintStep::forced({ids_of(v.vocab, {"a", "b"})}));
  steps.push_back(ConstraintStep::json(g));
  steps.push_back(ConstraintStep::forced({tail}));
  steps.push_back(ConstraintStep::end({eos}));
  OutputConstraint c(steps, *v.trie);
  EXPECT_FALSE(c.allowed().allowed(eos));  // the thinking part may not end the turn
  EXPECT_TRUE(c.allowed().allowed(v.vocab.rank("{")));
  c.accept(static_cast<int32_t>(v.vocab.rank("{")));
  c.accept(close);
  EXPECT_EQ(c.allowed().count(), 1);
  EXPECT_THROW(c.accept(static_cast<int32_t>(v.vocab.rank("b"))), Error);
  c.accept(static_cast<int32_t>(v.vocab.rank("a")));
  c.accept(static_cast<int32_t>(v.vocab.rank("b")));
  EXPECT_FALSE(c.allowed().allowed(tail[0]));  // no value yet
  EXPECT_FALSE(c.allowed().allowed(eos));
  c.accept(static_cast<int32_t>(v.vocab.rank("4")));
  EXPECT_TRUE(c.allowed().allowed(tail[0]));  // complete, and may go on
  EXPECT_TRUE(c.allowed().allowed(v.vocab.rank("2")));
  EXPECT_FALSE(c.allowed().allowed(eos));
  c.accept(tail[0]);
  EXPECT_FALSE(c.allowed().allowed(v.vocab.rank("2")));
  c.accept(tail[1]);
  EXPECT_EQ(c.allowed().count(), 1);
  EXPECT_FALSE(c.finished());
  c.accept(eos);
  EXPECT_TRUE(c.finished());
  EXPECT_GT(c.stats().masks, 0);

  // Without stop ids the output ends once the value cannot go on.
  OutputConstraint bare(
      {ConstraintStep::json(std::make_shared<JsonGrammar>(json_object_grammar())), ConstraintStep::end({})}, *v.trie);
  bare.accept(static_cast<int32_t>(v.vocab.rank("{")));
  EXPECT_FALSE(bare.finished());
  bare.accept(static_cast<int32_t>(v.vocab.rank("}")));
  EXPECT_TRUE(bare.finished());
}

TEST(OutputConstraint, TheSamplerChoosesOnlyAllowedIds) {
  const int64_t vocab = 50;
  std::vector<float> logits(vocab);
  for (int64_t i = 0; i < vocab; ++i) logits[static_cast<size_t>(i)] = static_cast<float>((i * 37) % 11);
  TokenMask m(vocab);
  for (int64_t i : {3, 17, 20, 41}) m.allow(i);
  // Greedy: the largest allowed logit (3 -> 1, 17 -> 2, 20 -> 3, 41 -> 10), not the global argmax (8 -> 10).
  EXPECT_EQ(greedy_token(logits.data(), vocab, &m), 41);
  EXPECT_EQ(greedy_token(logits.data(), vocab), 8);
  for (uint64_t seed = 0; seed < 200; ++seed) {
    SamplingParams p;
    p.temperature = 2.0;
    p.seed = seed;
    p.top_k = 2;
    Sampler s(p);
    const int32_t id = s.next(logits.data(), vocab, static_cast<int64_t>(seed), {}, &m);
    EXPECT_TRUE(m.allowed(id)) << id;
    EXPECT_TRUE(id == 41 || id == 20) << id;  // top-k counts allowed ids only
  }
  TokenMask none(vocab);
  EXPECT_THROW(greedy_token(logits.data(), vocab, &none), Error);
}

// A K3-size vocabulary shaped like a trained one: mostly words (with and
// without a leading space), numbers, punctuation runs with quotes and
// brackets, whitespace runs, and CJK text, all distinct.
std::vector<std::string> text_like_vocabulary(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (int b = 0; b < 256; ++b) out.push_back(std::string(1, static_cast<char>(b))), seen.insert(out.back());
  const std::string punct = "\"{}[]:,.;!?()-_'/\\*#=<>+";
  while (out.size() < n) {
    std::string t;
    const uint64_t kind = rng() % 100;
    if (kind < 70) {  // a word
      if (rng() % 2) t += ' ';
      if (rng() % 5 == 0) t += static_cast<char>('A' + rng() % 26);
      for (size_t i = 0, len = 1 + rng() % 9; i < len; ++i) t += static_cast<char>('a' + rng() % 26);
    } else if (kind < 78) {  // digits
      for (size_t i = 0, len = 1 + rng() % 3; i < len; ++i) t += static_cast<char>('0' + rng() % 10);
    } else if (kind < 90) {  // punctuation, often around a quote
      for (size_t i = 0, len = 1 + rng() % 4; i < len; ++i) t += punct[rng() % punct.size()];
      if (rng() % 3 == 0) t = (rng() % 2 ? " " : "") + t;
    } else if (kind < 93) {  // whitespace
      t = rng() % 2 ? "\n" : "";
      t += std::string(1 + rng() % 16, rng() % 4 ? ' ' : '\t');
    } else {  // one to three CJK characters (U+4E00..U+9FFF)
      for (size_t i = 0, len = 1 + rng() % 3; i < len; ++i) {
        const uint32_t cp = 0x4E00 + static_cast<uint32_t>(rng() % 0x5200);
        t += static_cast<char>(0xE0 | (cp >> 12));
        t += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        t += static_cast<char>(0x80 | (cp & 0x3F));
      }
    }
    if (seen.insert(t).second) out.push_back(t);
  }
  return out;
}

TEST(TokenMask, CostOnAK3SizeVocabulary) {
  // K3's vocabulary size: 163,584 ordinary ids (and 256 specials, no text).
  const std::vector<std::string> tokens = text_like_vocabulary(163584, 3);
  std::vector<std::string_view> bytes(tokens.begin(), tokens.end());
  std::vector<bool> text(bytes.size(), true);
  for (int i = 0; i < 256; ++i) bytes.push_back("<special>"), text.push_back(false);
  ASSERT_EQ(bytes.size(), 163840u);
  const auto t0 = std::chrono::steady_clock::now();
  const VocabularyTrie trie(bytes, text);
  const double build = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string schema =
      R"({"type":"object","properties":{"name":{"type":"string"},"note":{"type":"string","maxLength":100},)"
      R"("age":{"type":"integer"},"tags":{"type":"array","items":{"type":"string","enum":["a","b","c"]}}},)"
      R"("required":["name","note","age","tags"],"additionalProperties":false})";
  auto g = std::make_shared<JsonGrammar>(compile_json_schema_text(schema));
  double worst = 0;
  for (const char* prefix :
       {"", "{", "{\"name\":\"", "{\"name\":\"Ann\",\"note\":\"x", "{\"name\":\"A\",\"note\":\"\",\"age\":4",
        "{\"name\":\"A\",\"note\":\"\",\"age\":1,\"tags\":["}) {
    JsonTokenState s(g, trie);
    ASSERT_TRUE(s.accept(prefix)) << prefix;
    TokenMask m(static_cast<int64_t>(bytes.size()));
    double best = 1e9;
    for (int rep = 0; rep < 3; ++rep) {
      m.clear();
      const auto t = std::chrono::steady_clock::now();
      s.allowed(m);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
    }
    std::printf("mask after '%s': %lld ids allowed, %.3f ms\n", prefix, static_cast<long long>(m.count()), best * 1e3);
    worst = std::max(worst, best);
  }
  std::printf("163,840-id vocabulary: trie built in %.1f ms; worst mask %.3f ms\n", build * 1e3, worst * 1e3);
  EXPECT_LT(worst, 0.050);  // the target is 5 ms; a loaded shared machine gets ten times that
}

}  // namespace
}  // namespace k3
