// Small constructors for the JSON the server writes (JsonValue trees,
// written with the project's writer, python_json_dumps).
#pragma once

#include <cstdint>
#include <string>

#include "chat/json_value.h"

namespace k3::serve {

inline JsonValue json_int(int64_t v) {
  JsonValue out;
  out.kind = JsonValue::Kind::kInt;
  out.text = std::to_string(v);
  return out;
}
inline JsonValue json_float(double v) {
  JsonValue out;
  out.kind = JsonValue::Kind::kFloat;
  out.number = v;
  return out;
}
inline JsonValue json_bool(bool v) {
  JsonValue out;
  out.kind = JsonValue::Kind::kBool;
  out.boolean = v;
  return out;
}
inline JsonValue json_array() {
  JsonValue out;
  out.kind = JsonValue::Kind::kArray;
  return out;
}

}  // namespace k3::serve
