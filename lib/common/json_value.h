// A JSON document as Python's json.loads sees it, for the chat format.
//
// The chat renderer must write tool-call arguments exactly as Python's
// json.dumps would after json.loads, so the tree keeps what a double-based
// DOM loses: whether a number was written as an integer (Python int: any
// size, printed exactly) or a float (Python float), and objects as Python
// dicts (key order of first appearance; a repeated key keeps its first place
// and takes the last value).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace k3 {

struct JsonValue {
  enum class Kind { kNull, kBool, kInt, kFloat, kString, kArray, kObject };

  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;               // kFloat
  std::string text;                // kString: the value; kInt: the decimal digits, Python's int repr
  std::vector<JsonValue> items;    // kArray: elements; kObject: values, parallel to keys
  std::vector<std::string> keys;   // kObject

  bool is_null() const { return kind == Kind::kNull; }
  bool is_string() const { return kind == Kind::kString; }
  bool is_object() const { return kind == Kind::kObject; }
  bool is_array() const { return kind == Kind::kArray; }
  bool is_bool() const { return kind == Kind::kBool; }
  // The member `key` of an object, nullptr if absent (or not an object).
  const JsonValue* find(std::string_view key) const;
  // Adds or replaces a member (Python dict assignment).
  void set(std::string key, JsonValue value);

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
};

// Name of a kind for error messages: "a string", "an object", ...
const char* json_kind_name(JsonValue::Kind kind);

// Parses one JSON value (surrounding whitespace allowed). Returns false and
// sets `error` (with the byte offset where known) if `text` is not JSON.
// Objects are built in time linear in their number of keys.
bool parse_json(std::string_view text, JsonValue& out, std::string& error);

}  // namespace k3
