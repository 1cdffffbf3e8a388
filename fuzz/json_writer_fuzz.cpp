// The JSON writer (common/json_writer.h): whatever bytes the strings hold and
// whatever doubles the numbers are, the document parses with simdjson, every
// string that was well-formed UTF-8 reads back unchanged, and every finite
// double reads back as the same double. The input is cut at NUL bytes into
// strings; pairs become members of an object, and each string's first 8
// bytes are also taken as a double. The same document built as a JsonValue
// (common/json_value.h) dumps to the same bytes: one writer for both.
#include <simdjson.h>

#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "common/json_value.h"
#include "common/json_writer.h"
#include "fuzz_input.h"

namespace {

void fail(const char* what, const std::string& doc) {
  std::fprintf(stderr, "fuzz: json_writer: %s in:\n%s\n", what, doc.c_str());
  std::abort();
}

double double_of(const std::string& s) {
  double d = 0;
  std::memcpy(&d, s.data(), std::min(sizeof d, s.size()));
  return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> parts = k3::fuzz::split_input(data, size, 16);
  for (int indent : {0, 2}) {
    k3::JsonWriter w(indent);
    w.begin_object();
    for (size_t i = 0; i + 1 < parts.size(); i += 2) {
      w.key(parts[i]);
      if (i % 4 == 2) w.inline_next();
      w.begin_array().value(parts[i + 1]).value(double_of(parts[i + 1])).value(static_cast<int64_t>(size) - 7);
      w.end_array();
    }
    w.end_object();
    const std::string doc = w.take();
    if (indent == 0) {
      // JsonValue keeps one member per key, so compare only distinct keys.
      k3::JsonValue v = k3::JsonValue::object();
      std::set<std::string> keys;
      for (size_t i = 0; i + 1 < parts.size(); i += 2) {
        keys.insert(parts[i]);
        v.set(parts[i], k3::JsonValue::array()
                            .push(parts[i + 1])
                            .push(double_of(parts[i + 1]))
                            .push(static_cast<int64_t>(size) - 7));
      }
      if (keys.size() == parts.size() / 2 && v.dump(0) != doc + "\n")
        fail("JsonValue::dump differs from JsonWriter", doc);
    }
    simdjson::dom::parser parser;
    simdjson::dom::object root;
    if (parser.parse(doc).get_object().get(root) != simdjson::SUCCESS) fail("the document does not parse", doc);
    size_t i = 0;
    for (auto field : root) {
      if (i + 1 >= parts.size()) fail("more members than written", doc);
      const bool key_valid = simdjson::validate_utf8(parts[i].data(), parts[i].size());
      if (key_valid && std::string_view(field.key) != parts[i]) fail("a key did not read back", doc);
      simdjson::dom::array a;
      if (field.value.get_array().get(a) != simdjson::SUCCESS || a.size() != 3) fail("not the array written", doc);
      std::string_view s;
      if (a.at(0).get_string().get(s) != simdjson::SUCCESS) fail("not a string", doc);
      const std::string& v = parts[i + 1];
      if (simdjson::validate_utf8(v.data(), v.size()) && s != v) fail("a string did not read back", doc);
      if (!simdjson::validate_utf8(s.data(), s.size())) fail("a string is not UTF-8", doc);
      const double d = double_of(v);
      double back = 0;
      if (std::isfinite(d)) {
        if (a.at(1).get_double().get(back) != simdjson::SUCCESS || back != d) fail("a double did not read back", doc);
      } else if (!a.at(1).is_null()) {
        fail("a non-finite double is not null", doc);
      }
      i += 2;
    }
  }
  return 0;
}
