#include "serve/request_fields.h"

#include <charconv>
#include <cstdlib>
#include <cstring>

#include "serve/api_error.h"

namespace k3::serve {

void refuse_field(const std::string& field, const std::string& what) {
  throw ApiError(400, field + ": " + what, field);
}

std::string found_kind(const JsonValue& v) { return std::string(" (found ") + json_kind_name(v.kind) + ")"; }

const JsonValue* present(const JsonValue& obj, const char* key) {
  const JsonValue* v = obj.find(key);
  return v && !v->is_null() ? v : nullptr;
}

bool is_number(const JsonValue& v) { return v.kind == JsonValue::Kind::kInt || v.kind == JsonValue::Kind::kFloat; }

double number_of(const JsonValue& v) {
  return v.kind == JsonValue::Kind::kInt ? std::strtod(v.text.c_str(), nullptr) : v.number;
}

int64_t integer_in(const JsonValue& v, const std::string& field, int64_t lo, int64_t hi) {
  int64_t out = 0;
  bool ok = false;
  if (v.kind == JsonValue::Kind::kInt) {
    auto [end, ec] = std::from_chars(v.text.data(), v.text.data() + v.text.size(), out);
    ok = ec == std::errc() && end == v.text.data() + v.text.size() && out >= lo && out <= hi;
  }
  if (!ok)
    refuse_field(field, "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                            (v.kind == JsonValue::Kind::kInt ? " (found " + v.text + ")" : found_kind(v)));
  return out;
}

void only_keys(const JsonValue& obj, const std::string& path, std::initializer_list<const char*> allowed) {
  for (const std::string& key : obj.keys) {
    bool known = false;
    for (const char* a : allowed) known = known || key == a;
    if (!known) {
      std::string list;
      for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      refuse_field(path.empty() ? key : path + "." + key, "is not supported here (k3 reads " + list + ")");
    }
  }
}

}  // namespace k3::serve
