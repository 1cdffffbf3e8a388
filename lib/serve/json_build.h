// The JSON the server writes: small constructors for JsonValue trees, and
// write_json(), which writes a tree with the project's one writer
// (common/json_writer.h: its escaping, its numbers). Only tool-call
// arguments are written otherwise (python_json_dumps), because SPEC section
// 5 fixes their text: a client sends them back in the next request and the
// rendered prompt must hold exactly the ids the model generated.
#pragma once

#include <cstdint>
#include <string>

#include "common/json_value.h"

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

// `v` as JSON on one line (", " and ": " between members, as OpenAI's API
// and Python write it). An integer outside 64 bits is a bug (kInternal): the
// server writes only integers it made.
std::string write_json(const JsonValue& v);

}  // namespace k3::serve
