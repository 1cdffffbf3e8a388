// An independent validator of the JSON-Schema subset structured output
// enforces, written from the JSON Schema text (not from the recognizer), so
// that a byte the recognizer wrongly allows shows up as a value this refuses.
#pragma once

#include <string>

#include "common/json_value.h"

namespace k3::test {

inline size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

inline std::string compact_json(const JsonValue& v) {
  std::string s = v.dump(0);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

inline bool has_type(const JsonValue& v, const std::string& t) {
  using K = JsonValue::Kind;
  if (t == "null") return v.kind == K::kNull;
  if (t == "boolean") return v.kind == K::kBool;
  if (t == "string") return v.kind == K::kString;
  if (t == "integer") return v.kind == K::kInt;
  if (t == "number") return v.kind == K::kInt || v.kind == K::kFloat;
  if (t == "object") return v.kind == K::kObject;
  if (t == "array") return v.kind == K::kArray;
  return false;
}

// Whether `v` is valid against `s`; `root` resolves $ref.
inline bool validates(const JsonValue& v, const JsonValue& s, const JsonValue& root, int depth = 0) {
  if (depth > 200) return false;
  if (s.kind == JsonValue::Kind::kBool) return s.boolean;
  if (const JsonValue* ref = s.find("$ref")) {
    if (ref->text == "#") return validates(v, root, root, depth + 1);
    for (std::string prefix : {"#/$defs/", "#/definitions/"})
      if (ref->text.rfind(prefix, 0) == 0) {
        const JsonValue* defs = root.find(prefix.substr(2, prefix.size() - 3));
        const JsonValue* target = defs ? defs->find(ref->text.substr(prefix.size())) : nullptr;
        return target && validates(v, *target, root, depth + 1);
      }
    return false;
  }
  if (const JsonValue* any = s.find("anyOf")) {
    bool ok = false;
    for (const JsonValue& alt : any->items) ok = ok || validates(v, alt, root, depth + 1);
    if (!ok) return false;
  }
  if (const JsonValue* t = s.find("type")) {
    bool ok = false;
    if (t->is_string()) ok = has_type(v, t->text);
    for (const JsonValue& x : t->items) ok = ok || has_type(v, x.text);
    if (!ok) return false;
  }
  if (const JsonValue* e = s.find("enum")) {
    bool ok = false;
    for (const JsonValue& x : e->items) ok = ok || compact_json(x) == compact_json(v);
    if (!ok) return false;
  }
  if (const JsonValue* c = s.find("const"); c && compact_json(*c) != compact_json(v)) return false;
  if (v.is_string()) {
    if (const JsonValue* m = s.find("minLength"); m && code_points(v.text) < std::stoul(m->text)) return false;
    if (const JsonValue* m = s.find("maxLength"); m && code_points(v.text) > std::stoul(m->text)) return false;
  }
  if (v.is_array()) {
    if (const JsonValue* m = s.find("minItems"); m && v.items.size() < std::stoul(m->text)) return false;
    if (const JsonValue* m = s.find("maxItems"); m && v.items.size() > std::stoul(m->text)) return false;
    if (const JsonValue* items = s.find("items"))
      for (const JsonValue& x : v.items)
        if (!validates(x, *items, root, depth + 1)) return false;
  }
  if (v.is_object()) {
    const JsonValue* props = s.find("properties");
    const JsonValue* extra = s.find("additionalProperties");
    if (const JsonValue* req = s.find("required"))
      for (const JsonValue& r : req->items)
        if (!v.find(r.text)) return false;
    for (size_t i = 0; i < v.keys.size(); ++i) {
      const JsonValue* p = props ? props->find(v.keys[i]) : nullptr;
      if (p) {
        if (!validates(v.items[i], *p, root, depth + 1)) return false;
      } else if (extra && !validates(v.items[i], *extra, root, depth + 1)) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace k3::test
