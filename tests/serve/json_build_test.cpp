// k3-serve's responses go through the project's one JSON writer
// (write_json over common/json_writer): exact text for a response-shaped
// tree, and JSON that parses where Python's json.dumps form would not (a
// non-finite float: null, not NaN) or would carry invalid UTF-8 (U+FFFD).
#include <gtest/gtest.h>

#include <cmath>

#include "common/error.h"
#include "common/json_value.h"
#include "serve/json_build.h"

namespace k3::serve {
namespace {

TEST(WriteJson, ResponseShapeExactText) {
  JsonValue details = JsonValue::object();
  details.set("cached_tokens", json_int(12));
  JsonValue arr = json_array();
  arr.items.push_back(json_bool(true));
  arr.items.push_back(JsonValue());
  arr.items.push_back(json_float(0.25));
  JsonValue out = JsonValue::object();
  out.set("id", JsonValue::string("cmpl-1"));
  out.set("text", JsonValue::string("a\"b\\c\n\x01"));
  out.set("usage", std::move(details));
  out.set("list", std::move(arr));
  out.set("big", json_int(-9007199254740993));
  EXPECT_EQ(write_json(out),
            "{\"id\": \"cmpl-1\", \"text\": \"a\\\"b\\\\c\\n\\u0001\", \"usage\": {\"cached_tokens\": 12}, "
            "\"list\": [true, null, 0.25], \"big\": -9007199254740993}");
}

TEST(WriteJson, AlwaysValidJson) {
  JsonValue out = JsonValue::object();
  out.set("seconds", json_float(std::nan("")));
  out.set("inf", json_float(INFINITY));
  out.set("text", JsonValue::string(std::string("ok\xff\xc3", 4)));  // a stray byte, a cut sequence
  const std::string text = write_json(out);
  EXPECT_EQ(text, "{\"seconds\": null, \"inf\": null, \"text\": \"ok\xEF\xBF\xBD\xEF\xBF\xBD\"}");
  JsonValue back;
  std::string error;
  EXPECT_TRUE(parse_json(text, back, error)) << error;
}

TEST(WriteJson, IntegerBeyond64BitsIsABug) {
  JsonValue big;
  big.kind = JsonValue::Kind::kInt;
  big.text = "123456789012345678901234567890";
  EXPECT_THROW(write_json(big), Error);
}

}  // namespace
}  // namespace k3::serve
