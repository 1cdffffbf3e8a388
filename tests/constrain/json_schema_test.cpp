// The schema compiler and the byte recognizer: each keyword accepts the
// values the schema allows and refuses, at the first wrong byte, the ones it
// does not; unsupported keywords and hostile schemas are refused by name.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "constrain/json_schema_compiler.h"
#include "constrain/json_token_state.h"

namespace k3 {
namespace {

// Every byte as its own id: accepts() then reads text byte by byte.
const VocabularyTrie& byte_vocab() {
  static const std::vector<std::string> bytes = [] {
    std::vector<std::string> b;
    for (int i = 0; i < 256; ++i) b.push_back(std::string(1, static_cast<char>(i)));
    return b;
  }();
  static const VocabularyTrie trie = [] {
    std::vector<std::string_view> views(bytes.begin(), bytes.end());
    return VocabularyTrie(views, std::vector<bool>(views.size(), true));
  }();
  return trie;
}

struct Schema {
  std::shared_ptr<const JsonGrammar> g;
  explicit Schema(const std::string& text) : g(std::make_shared<JsonGrammar>(compile_json_schema_text(text))) {}
  // A whole value: every byte accepted and the value complete after the last.
  bool full(const std::string& text) const {
    JsonTokenState s(g, byte_vocab());
    return s.accept(text) && s.complete();
  }
  // A prefix that can still become a value.
  bool prefix(const std::string& text) const { return JsonTokenState(g, byte_vocab()).accepts(text); }
};

std::string refusal(const std::string& schema) {
  try {
    compile_json_schema_text(schema);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
    return e.what();
  }
  return "";
}

TEST(JsonSchema, StrictObjectInOrderWithRequiredKeys) {
  Schema s(R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},)"
           R"("required":["name","age"],"additionalProperties":false})");
  EXPECT_TRUE(s.full(R"({"name":"Ann","age":31})"));
  EXPECT_TRUE(s.full("{ \"name\" : \"A\" ,\n  \"age\": -0 }"));
  EXPECT_FALSE(s.full(R"({"name":"Ann"})"));           // a required key missing
  EXPECT_FALSE(s.prefix(R"({"age")"));                 // order: name first
  EXPECT_FALSE(s.prefix(R"({"nam":)"));                // not a declared key
  EXPECT_FALSE(s.prefix(R"({"name":"a","age":1,)"));   // nothing after the last key
  EXPECT_FALSE(s.prefix(R"({"name":"a","name")"));     // no key twice
  EXPECT_FALSE(s.prefix(R"({"name":"a","age":1.5)"));  // integer
  EXPECT_FALSE(s.prefix(R"({"name":"a"})"));           // '}' before a required key
  EXPECT_FALSE(s.full(R"({"name":"a","age":1} )"));    // nothing after the value
}

TEST(JsonSchema, OptionalPropertiesMayBeSkipped) {
  Schema s(R"({"properties":{"a":{"type":"boolean"},"b":{"type":"null"},"c":{"const":3}},"required":["c"]})");
  EXPECT_TRUE(s.full(R"({"c":3})"));
  EXPECT_TRUE(s.full(R"({"b":null,"c":3})"));
  EXPECT_TRUE(s.full(R"({"a":false,"b":null,"c":3})"));
  EXPECT_FALSE(s.prefix(R"({"c":3,"a")"));  // past c, nothing is left
  EXPECT_FALSE(s.full(R"({"a":true})"));    // c is required
  EXPECT_FALSE(s.prefix(R"({"a":tru "})"));
  EXPECT_FALSE(s.full(R"({"c":4})"));
  EXPECT_FALSE(s.full(R"({"c":30})"));
}

TEST(JsonSchema, ArraysWithBounds) {
  Schema s(R"({"type":"array","items":{"type":"number"},"minItems":1,"maxItems":3})");
  EXPECT_TRUE(s.full("[1]"));
  EXPECT_TRUE(s.full("[1.5e+10, -0.25, 3E-2]"));
  EXPECT_FALSE(s.full("[]"));
  EXPECT_FALSE(s.prefix("[1,2,3,"));
  EXPECT_FALSE(s.prefix("[01"));
  EXPECT_FALSE(s.prefix("[1.]"));
  EXPECT_FALSE(s.prefix("[.5"));
  EXPECT_FALSE(s.prefix("[1e]"));
  EXPECT_FALSE(s.prefix("[\"1\""));
  EXPECT_TRUE(s.full("[123456789012345]"));
  EXPECT_FALSE(s.prefix("[1234567890123456"));  // more integer digits than a double holds exactly
}

TEST(JsonSchema, StringsEscapesUtf8AndLengths) {
  Schema s(R"({"type":"string"})");
  EXPECT_TRUE(s.full(R"("a\"b\\c\/\b\f\n\r\t\u00e9")"));
  EXPECT_TRUE(s.full("\"caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80\""));
  EXPECT_FALSE(s.prefix("\"a\nb"));              // raw control byte
  EXPECT_FALSE(s.prefix("\"\\x"));               // unknown escape
  EXPECT_FALSE(s.prefix("\"\\u12G"));            // not hex
  EXPECT_FALSE(s.prefix("\"\\uD800"));           // a lone surrogate
  EXPECT_FALSE(s.prefix("\"\xC0\x80"));          // overlong
  EXPECT_FALSE(s.prefix("\"\xED\xA0\x80"));      // encoded surrogate
  EXPECT_FALSE(s.prefix("\"\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(s.prefix("\"\xC3\x41"));          // a lead byte without its continuation
  EXPECT_FALSE(s.full("\"abc"));
  Schema bounded(R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_FALSE(bounded.full("\"a\""));
  EXPECT_TRUE(bounded.full("\"a\xC3\xA9\""));  // two code points
  EXPECT_TRUE(bounded.full("\"ab\\n\""));
  EXPECT_FALSE(bounded.prefix("\"abcd"));
}

TEST(JsonSchema, EnumsConstsAndTypeLists) {
  Schema e(R"({"type":"string","enum":["red","green","gr"]})");
  EXPECT_TRUE(e.full("\"red\""));
  EXPECT_TRUE(e.full("\"gr\""));
  EXPECT_FALSE(e.prefix("\"blue"));
  EXPECT_FALSE(e.full("\"re\""));
  Schema mixed(R"({"enum":[1,12,null,"x",{"k":[true]}]})");
  EXPECT_TRUE(mixed.full("1"));
  EXPECT_TRUE(mixed.full("12"));
  EXPECT_TRUE(mixed.full("null"));
  EXPECT_FALSE(mixed.prefix("13"));
  EXPECT_FALSE(mixed.full("nul"));
  EXPECT_TRUE(mixed.full(R"({"k": [true]})"));  // written as compact JSON (", " and ": ")
  Schema nullable(R"({"type":["string","null"]})");
  EXPECT_TRUE(nullable.full("null"));
  EXPECT_TRUE(nullable.full("\"s\""));
  EXPECT_FALSE(nullable.prefix("1"));
  Schema boolean(R"({"type":"boolean"})");
  EXPECT_TRUE(boolean.full("true"));
  EXPECT_FALSE(boolean.prefix("tru3"));
  Schema filtered(R"({"type":"integer","enum":[1,"1",2.5]})");  // only values of the type
  EXPECT_TRUE(filtered.full("1"));
  EXPECT_FALSE(filtered.prefix("\""));
  EXPECT_FALSE(filtered.prefix("2"));
}

TEST(JsonSchema, AnyOfFollowsEveryAlternative) {
  Schema s(R"({"anyOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],)"
           R"("additionalProperties":false},{"type":"object","properties":{"a":{"type":"string"}},)"
           R"("required":["a"],"additionalProperties":false},{"type":"integer"}]})");
  EXPECT_TRUE(s.full(R"({"a":1})"));
  EXPECT_TRUE(s.full(R"({"a":"x"})"));
  EXPECT_TRUE(s.full("7"));
  EXPECT_FALSE(s.prefix(R"({"a":true)"));
  EXPECT_FALSE(s.prefix("\"7"));
}

TEST(JsonSchema, RecursiveDefinitions) {
  Schema s(R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},)"
           R"("kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v","kids"],)"
           R"("additionalProperties":false}},"$ref":"#/$defs/node"})");
  EXPECT_TRUE(s.full(R"({"v":1,"kids":[{"v":2,"kids":[]},{"v":3,"kids":[{"v":4,"kids":[]}]}]})"));
  EXPECT_FALSE(s.prefix(R"({"v":1,"kids":[{"v":2}])"));
  Schema root(R"({"type":"object","properties":{"next":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},)"
              R"("required":["next"],"additionalProperties":false})");
  EXPECT_TRUE(root.full(R"({"next":{"next":null}})"));
  EXPECT_FALSE(root.full(R"({"next":{}})"));
}

TEST(JsonSchema, AnyValueAndFreeObjects) {
  JsonGrammar g = json_object_grammar();
  auto obj = std::make_shared<JsonGrammar>(std::move(g));
  auto full = [&](const std::string& t) {
    JsonTokenState s(obj, byte_vocab());
    return s.accept(t) && s.complete();
  };
  EXPECT_TRUE(full(R"({"x":[1,{"y":null}],"z":"w","x":true})"));
  EXPECT_TRUE(full("{}"));
  EXPECT_FALSE(full("[]"));
  EXPECT_FALSE(full("\"s\""));
  EXPECT_FALSE(full(R"({"x":})"));
  EXPECT_FALSE(full(R"({x:1})"));
  Schema values(R"({"type":"object","additionalProperties":{"type":"integer"}})");
  EXPECT_TRUE(values.full(R"({"a":1,"b":2})"));
  EXPECT_FALSE(values.prefix(R"({"a":"1")"));
  Schema empty(R"({"type":"object","additionalProperties":false})");
  EXPECT_TRUE(empty.full("{}"));
  EXPECT_FALSE(empty.prefix("{\""));
}

TEST(JsonSchema, WhitespaceIsBounded) {
  Schema s(R"({"type":"array","items":{"type":"integer"}})");
  EXPECT_TRUE(s.full("[" + std::string(JsonRecognizer::kMaxWhitespace, ' ') + "1]"));
  EXPECT_FALSE(s.prefix("[" + std::string(JsonRecognizer::kMaxWhitespace + 1, ' ')));
}

TEST(JsonSchema, UnsupportedKeywordsAreRefusedByName) {
  for (const char* k : {"pattern", "format", "minimum", "maximum", "exclusiveMinimum", "multipleOf", "oneOf", "allOf",
                        "not", "if", "patternProperties", "propertyNames", "minProperties", "prefixItems",
                        "uniqueItems", "contains", "dependentRequired", "unevaluatedProperties"}) {
    const std::string msg =
        refusal(std::string(R"({"type":"object","properties":{"a":{"type":"string",")") + k + R"(":1}}})");
    EXPECT_NE(msg.find(std::string("keyword \"") + k + "\" is not supported"), std::string::npos) << msg;
    EXPECT_NE(msg.find("#/properties/a"), std::string::npos) << msg;
  }
  EXPECT_NE(refusal(R"({"properties":{"a":{}},"additionalProperties":{"type":"string"}})").find("additionalProperties"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"$ref":"http://example.com/s.json"})").find("$ref"), std::string::npos);
  EXPECT_NE(refusal(R"({"type":"strin"})").find("\"strin\""), std::string::npos);
  EXPECT_NE(refusal(R"({"enum":[]})").find("enum"), std::string::npos);
  EXPECT_NE(refusal(R"({"type":"string","enum":[1]})").find("declared type"), std::string::npos);
  EXPECT_NE(refusal(R"({"required":["a"],"properties":{"b":{}}})").find("\"a\""), std::string::npos);
  EXPECT_NE(refusal(R"({"type":"string","$ref":"#"})").find("beside"), std::string::npos);
  EXPECT_NE(refusal("false").find("false"), std::string::npos);
  EXPECT_NE(refusal("{").find("not JSON"), std::string::npos);
}

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(JsonSchema, HostileSchemasAreRefusedOrBounded) {
  // Recursion loops that read no byte.
  EXPECT_NE(refusal(R"({"$ref":"#"})").find("refers back to itself"), std::string::npos);
  EXPECT_NE(refusal(R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"anyOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"})")
                .find("refers back to itself"),
            std::string::npos);
  // A value that can never end.
  EXPECT_NE(refusal(R"({"type":"object","properties":{"a":{"$ref":"#"}},"required":["a"]})").find("no finite value"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"type":"array","minItems":1,"items":{"$ref":"#"}})").find("no finite value"),
            std::string::npos);
  // Deep nesting, refused before parsing.
  std::string deep;
  for (int i = 0; i < 20000; ++i) deep += R"({"type":"array","items":)";  // 480 kB: under the size limit
  deep += "{}" + std::string(20000, '}');
  EXPECT_LT(seconds_of([&] { EXPECT_NE(refusal(deep).find("levels deep"), std::string::npos); }), 2.0);
  // 10 MB.
  std::string big = R"({"type":"string","enum":[)";
  while (big.size() < 10'000'000) big += "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\",";
  big += "\"y\"]}";
  EXPECT_LT(seconds_of([&] { EXPECT_NE(refusal(big).find("at most"), std::string::npos); }), 2.0);
  // A huge enum within the size limit compiles in bounded time and is enforced.
  std::string wide = R"({"enum":[)";
  for (int i = 0; i < 60000; ++i) wide += (i ? "," : "") + std::to_string(i * 7);
  wide += "]}";
  std::unique_ptr<Schema> s;
  EXPECT_LT(seconds_of([&] { s = std::make_unique<Schema>(wide); }), 5.0);
  EXPECT_TRUE(s->full("419993"));
  EXPECT_FALSE(s->full("419994"));
  // Many alternatives side by side stay capped.
  std::string alts = R"({"anyOf":[)";
  for (int i = 0; i < 500; ++i)
    alts += std::string(i ? "," : "") + R"({"type":"array","items":{"const":)" + std::to_string(i) + "}}";
  alts += "]}";
  Schema many(alts);
  EXPECT_TRUE(many.full("[7,7]"));
}

TEST(JsonSchema, NestingDepthOfTheOutputIsBounded) {
  JsonGrammar g = json_object_grammar();
  auto obj = std::make_shared<JsonGrammar>(std::move(g));
  JsonTokenState s(obj, byte_vocab());
  std::string deep = "{\"a\":";
  for (int i = 0; i < 200; ++i) deep += "[";
  EXPECT_FALSE(s.accepts(deep));
  EXPECT_TRUE(s.accepts("{\"a\":[[[[1]]]]}"));
}

}  // namespace
}  // namespace k3
