// The one JSON value type: a document as Python's json.loads sees it (the
// chat format, k3-serve's requests), and the tree k3 builds to write JSON
// (k3-doctor --json, k3-serve's responses).
//
// The chat renderer must write tool-call arguments exactly as Python's
// json.dumps would after json.loads, so the tree keeps what a double-based
// DOM loses: whether a number was written as an integer (Python int: any
// size, printed exactly) or a float (Python float), and objects as Python
// dicts (key order of first appearance; a repeated key keeps its first place
// and takes the last value). Built objects keep insertion order too, so
// written output has the same keys in the same order on every run.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace k3 {

struct JsonValue {
  enum class Kind { kNull, kBool, kInt, kFloat, kString, kArray, kObject };

  JsonValue() = default;  // null
  // Scalars. Explicit, so a string is never taken for a parsed document;
  // set() and push() take scalars directly: o.set("rows", 3).set("name", "x").
  // A double that is not finite is null (JSON has no NaN).
  explicit JsonValue(bool b);
  explicit JsonValue(int v) : JsonValue(static_cast<int64_t>(v)) {}
  explicit JsonValue(int64_t v);
  explicit JsonValue(uint64_t v);
  explicit JsonValue(double v);
  explicit JsonValue(const char* s) : JsonValue(std::string(s ? s : "")) {}
  explicit JsonValue(std::string s);

  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;              // kFloat
  std::string text;               // kString: the value; kInt: the decimal digits, Python's int repr
  std::vector<JsonValue> items;   // kArray: elements; kObject: values, parallel to keys
  std::vector<std::string> keys;  // kObject

  bool is_null() const { return kind == Kind::kNull; }
  bool is_string() const { return kind == Kind::kString; }
  bool is_object() const { return kind == Kind::kObject; }
  bool is_array() const { return kind == Kind::kArray; }
  bool is_bool() const { return kind == Kind::kBool; }
  // The member `key` of an object, nullptr if absent (or not an object).
  const JsonValue* find(std::string_view key) const;
  // Adds or replaces a member (Python dict assignment; the value takes the
  // key's first place). Makes a null value an object. Returns *this.
  JsonValue& set(std::string key, JsonValue value);
  template <typename T>
  requires std::constructible_from<JsonValue, T> JsonValue& set(std::string key, T&& scalar) {
    return set(std::move(key), JsonValue(std::forward<T>(scalar)));
  }
  // Appends an element. Makes a null value an array. Returns *this.
  JsonValue& push(JsonValue value);
  template <typename T>
  requires std::constructible_from<JsonValue, T> JsonValue& push(T&& scalar) {
    return push(JsonValue(std::forward<T>(scalar)));
  }

  // The document through JsonWriter (common/json_writer.h: every string
  // escaped, numbers exactly), `indent` spaces per level (0: one line),
  // ending in a newline.
  std::string dump(int indent = 2) const;

  static JsonValue string(std::string s) {
    JsonValue v;
    v.kind = Kind::kString;
    v.text = std::move(s);
    return v;
  }
  static JsonValue object() {
    JsonValue v;
    v.kind = Kind::kObject;
    return v;
  }
  static JsonValue array() {
    JsonValue v;
    v.kind = Kind::kArray;
    return v;
  }
};

// Name of a kind for error messages: "a string", "an object", ...
const char* json_kind_name(JsonValue::Kind kind);

class JsonWriter;
// Writes `v` through `w`: the one walk behind dump() and k3-serve's
// write_json(). A document read from outside keeps its integers exact at any
// size (Python ints); with `refuse_wide_integers` an integer outside 64 bits
// is a bug of the code that built the tree (kInternal), for a writer that
// only writes integers it made.
void write_json_value(JsonWriter& w, const JsonValue& v, bool refuse_wide_integers);

// Parses one JSON value (surrounding whitespace allowed). Returns false and
// sets `error` (with the byte offset where known) if `text` is not JSON.
// Objects are built in time linear in their number of keys.
bool parse_json(std::string_view text, JsonValue& out, std::string& error);

}  // namespace k3
