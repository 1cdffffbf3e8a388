// A small ordered JSON value for k3-doctor's --json output.
//
// Objects keep their keys in insertion order, so the output has the same
// keys in the same order on every run (scripts diff it). Numbers that are not
// finite are written as null: JSON has no NaN.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace k3::doctor {

class JsonValue {
 public:
  enum class Kind : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };

  JsonValue() = default;  // null
  JsonValue(bool b);
  JsonValue(int v);
  JsonValue(int64_t v);
  JsonValue(uint64_t v);
  JsonValue(double v);
  JsonValue(const char* s);
  JsonValue(std::string s);
  static JsonValue object();
  static JsonValue array();

  Kind kind() const { return kind_; }
  // Objects: appends `key` (or replaces its value in place). Returns *this.
  JsonValue& set(const std::string& key, JsonValue v);
  // Arrays: appends.
  JsonValue& push(JsonValue v);

  std::string dump(int indent = 2) const;

 private:
  void dump_to(std::string* out, int indent, int depth) const;
  Kind kind_ = Kind::kNull;
  std::string scalar_;  // number text, or the string's value
  bool bool_ = false;
  std::vector<std::pair<std::string, JsonValue>> members_;
  std::vector<JsonValue> items_;
};

}  // namespace k3::doctor
