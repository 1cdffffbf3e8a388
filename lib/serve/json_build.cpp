#include "serve/json_build.h"

#include <charconv>

#include "common/error.h"
#include "common/json_writer.h"

namespace k3::serve {

namespace {

void write_value(JsonWriter& w, const JsonValue& v) {
  switch (v.kind) {
    case JsonValue::Kind::kNull: w.null(); return;
    case JsonValue::Kind::kBool: w.value(v.boolean); return;
    case JsonValue::Kind::kInt: {
      long long n = 0;
      const char* end = v.text.data() + v.text.size();
      const auto [ptr, ec] = std::from_chars(v.text.data(), end, n);
      if (ec != std::errc() || ptr != end)
        throw Error(ExitCode::kInternal, "write_json: integer " + v.text + " is not 64-bit");
      w.value(n);
      return;
    }
    case JsonValue::Kind::kFloat: w.value(v.number); return;
    case JsonValue::Kind::kString: w.value(v.text); return;
    case JsonValue::Kind::kArray:
      w.begin_array();
      for (const JsonValue& item : v.items) write_value(w, item);
      w.end_array();
      return;
    case JsonValue::Kind::kObject:
      w.begin_object();
      for (size_t i = 0; i < v.keys.size(); ++i) {
        w.key(v.keys[i]);
        write_value(w, v.items[i]);
      }
      w.end_object();
      return;
  }
}

}  // namespace

std::string write_json(const JsonValue& v) {
  JsonWriter w(0);
  write_value(w, v);
  return w.take();
}

}  // namespace k3::serve
