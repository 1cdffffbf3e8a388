// The JSON writer: every control byte 0x00-0x1f escaped (checked one by one
// against its expected escape, and parsed back by simdjson to the same byte),
// invalid UTF-8 replaced by U+FFFD per byte while well-formed UTF-8 passes
// through, numbers, layout (one line and indented), and misuse refused.
#include <gtest/gtest.h>

#include <simdjson.h>

#include <cmath>
#include <limits>
#include <string>

#include "common/error.h"
#include "common/json_value.h"
#include "common/json_writer.h"

namespace k3 {
namespace {

std::string parsed_string(const std::string& json) {
  simdjson::dom::parser parser;
  std::string_view v;
  const auto err = parser.parse(json).get_string().get(v);
  EXPECT_EQ(err, simdjson::SUCCESS) << json;
  return std::string(v);
}

TEST(JsonString, EveryControlByteIsEscapedAndParsesBack) {
  const char* expected[32] = {"\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007",
                              "\\b",     "\\t",     "\\n",     "\\u000b", "\\f",     "\\r",     "\\u000e", "\\u000f",
                              "\\u0010", "\\u0011", "\\u0012", "\\u0013", "\\u0014", "\\u0015", "\\u0016", "\\u0017",
                              "\\u0018", "\\u0019", "\\u001a", "\\u001b", "\\u001c", "\\u001d", "\\u001e", "\\u001f"};
  for (int c = 0; c < 0x20; ++c) {
    const std::string in(1, static_cast<char>(c));
    const std::string out = json_string(in);
    EXPECT_EQ(out, "\"" + std::string(expected[c]) + "\"") << "byte " << c;
    EXPECT_EQ(parsed_string(out), in) << "byte " << c;
  }
  std::string all;
  for (int c = 0; c < 0x80; ++c) all.push_back(static_cast<char>(c));
  EXPECT_EQ(parsed_string(json_string(all)), all);
}

TEST(JsonString, QuotesBackslashDelAndUtf8AreKept) {
  EXPECT_EQ(json_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(json_string("\x7f"), "\"\x7f\"");
  const std::string utf8 =
      "\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xEF\xBF\xBF \xF4\x8F\xBF\xBF";  // é € 😀 U+FFFF U+10FFFF
  EXPECT_EQ(json_string(utf8), "\"" + utf8 + "\"");
  EXPECT_EQ(parsed_string(json_string(utf8)), utf8);
}

TEST(JsonString, InvalidUtf8BecomesOneReplacementCharacterPerByte) {
  const std::string r = "\xEF\xBF\xBD";
  const struct {
    std::string in, out;
  } cases[] = {
      {"\x80", r},                          // a stray continuation byte
      {"a\xC3", "a" + r},                   // truncated at the end
      {"\xC3z", r + "z"},                   // lead byte without its continuation
      {"\xC0\xAF", r + r},                  // overlong '/'
      {"\xE0\x80\xAF", r + r + r},          // overlong 3-byte form
      {"\xED\xA0\x80", r + r + r},          // a surrogate (U+D800)
      {"\xF4\x90\x80\x80", r + r + r + r},  // past U+10FFFF
      {"\xF5\x80", r + r},                  // never a lead byte
      {"\xFF", r},
      {"\xE2\x82", r + r},  // truncated 3-byte sequence
  };
  for (const auto& c : cases) {
    const std::string out = json_string(c.in);
    EXPECT_EQ(out, "\"" + c.out + "\"");
    EXPECT_EQ(parsed_string(out), c.out);  // simdjson validates UTF-8
  }
}

TEST(JsonNumber, ShortestRoundTripAndNullForNonFinite) {
  EXPECT_EQ(json_number(0.1), "0.1");
  EXPECT_EQ(json_number(3.0), "3");
  EXPECT_EQ(json_number(-2.5e-7), "-2.5e-07");
  EXPECT_EQ(json_number(123456.0), "123456");
  EXPECT_EQ(json_number(9223372036854775808.0), "9.223372036854776e+18");  // not an integer past int64
  EXPECT_EQ(json_number(1.8446744073709552e19), "1.8446744073709552e+19");
  EXPECT_EQ(json_number(std::numeric_limits<double>::quiet_NaN()), "null");
  EXPECT_EQ(json_number(std::numeric_limits<double>::infinity()), "null");
  const double x = 0.1 + 0.2;
  EXPECT_EQ(std::stod(json_number(x)), x);
}

TEST(JsonWriter, OneLineDocument) {
  JsonWriter w;
  w.begin_object();
  w.key("s").value("x\ny");
  w.key("i").value(-3);
  w.key("u").value(static_cast<uint64_t>(18446744073709551615ull));
  w.key("d").value(0.5);
  w.key("f").fixed(2.0 / 3.0, 3);
  w.key("b").value(true);
  w.key("n").null();
  w.key("a").begin_array().value(1).value("two").begin_object().end_object().begin_array().end_array().end_array();
  w.end_object();
  EXPECT_EQ(w.take(),
            "{\"s\": \"x\\ny\", \"i\": -3, \"u\": 18446744073709551615, \"d\": 0.5, \"f\": 0.667, \"b\": true, "
            "\"n\": null, \"a\": [1, \"two\", {}, []]}");
}

TEST(JsonWriter, CompactDocumentHasNoSpaces) {
  JsonWriter w = JsonWriter::compact();
  w.begin_object();
  w.key("s").value("a b");
  w.key("a").begin_array().value(1).value(-0.5).begin_object().key("k").value(true).end_object().end_array();
  w.key("e").begin_array().end_array();
  w.end_object();
  EXPECT_EQ(w.take(), "{\"s\":\"a b\",\"a\":[1,-0.5,{\"k\":true}],\"e\":[]}");
}

TEST(JsonWriter, IndentedDocumentWithAnInlineRecord) {
  JsonWriter w(2);
  w.begin_object();
  w.key("k").value(1);
  w.key("rec").inline_next().begin_object().key("x").value(1).key("y").begin_array().value(2).end_array().end_object();
  w.key("list").begin_array().value(1).value(2).end_array();
  w.key("empty").begin_object().end_object();
  w.end_object();
  const std::string doc = w.take();
  EXPECT_EQ(
      doc,
      "{\n  \"k\": 1,\n  \"rec\": {\"x\": 1, \"y\": [2]},\n  \"list\": [\n    1,\n    2\n  ],\n  \"empty\": {}\n}");
  simdjson::dom::parser parser;
  EXPECT_EQ(parser.parse(doc).error(), simdjson::SUCCESS);
}

TEST(JsonWriter, MisuseIsAnInternalError) {
  auto code = [](auto f) {
    try {
      f();
    } catch (const Error& e) {
      return e.code();
    }
    return ExitCode::kOk;
  };
  EXPECT_EQ(code([] { JsonWriter().begin_object().value(1); }), ExitCode::kInternal);  // a value without a key
  EXPECT_EQ(code([] { JsonWriter().begin_array().key("k"); }), ExitCode::kInternal);   // a key in an array
  EXPECT_EQ(code([] { JsonWriter().begin_array().end_object(); }), ExitCode::kInternal);
  EXPECT_EQ(code([] { JsonWriter().begin_object().take(); }), ExitCode::kInternal);  // still open
  EXPECT_EQ(code([] { JsonWriter().value(1).value(2); }), ExitCode::kInternal);      // two documents
  EXPECT_EQ(code([] { JsonWriter().begin_object().key("a").end_object(); }), ExitCode::kInternal);
  EXPECT_EQ(code([] { JsonWriter().integer_text("1e5"); }), ExitCode::kInternal);  // not an integer
  EXPECT_EQ(code([] { JsonWriter().integer_text("-"); }), ExitCode::kInternal);
}

// The one JSON value type writes through the one writer: a parsed document
// comes back with its integers exact whatever their size, its floats as
// numbers, its key order kept, and every control character escaped.
TEST(JsonValue, DumpWritesAParsedDocumentBack) {
  JsonValue v;
  std::string error;
  ASSERT_TRUE(parse_json(R"({"big": -123456789012345678901234567890, "f": 0.25, "s": "a\u0001\u001fb\n",)"
                         R"( "b": [true, null], "a": {}})",
                         v, error))
      << error;
  EXPECT_EQ(v.dump(0),
            "{\"big\": -123456789012345678901234567890, \"f\": 0.25, \"s\": \"a\\u0001\\u001fb\\n\", "
            "\"b\": [true, null], \"a\": {}}\n");
  JsonValue built = JsonValue::object();
  built.set("n", 3).set("x", 1.0 / 0.0).set("list", JsonValue::array().push("t\x02").push(uint64_t{1} << 63));
  EXPECT_EQ(built.dump(2),
            "{\n  \"n\": 3,\n  \"x\": null,\n  \"list\": [\n    \"t\\u0002\",\n    9223372036854775808\n  ]\n}\n");
}

}  // namespace
}  // namespace k3
