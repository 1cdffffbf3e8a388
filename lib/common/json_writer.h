// Writing JSON: the one string escaper and a small writer for objects and
// arrays, so every JSON k3 writes (--stats-json, k3-doctor --json, the fetch
// manifest, safetensors headers, trunk.json, chat templates' tojson) is
// valid whatever its strings hold.
//
// Strings: '"' and '\\' are escaped, the control characters 0x00-0x1f all
// are (\b \f \n \r \t short, the others as \u00xx with lowercase hex, as
// Python's json.dumps writes them); DEL and non-ASCII UTF-8 are kept as they
// are. Invalid UTF-8 (a stray continuation byte, a truncated or overlong
// sequence, a surrogate, a code point past U+10FFFF) cannot be represented in
// JSON: each byte of it is written as U+FFFD (EF BF BD), so the output is
// always valid UTF-8 and parses.
//
// Numbers: integers exactly; doubles with the fewest digits that read back to
// the same double (or a fixed number of decimals with fixed()); NaN and the
// infinities have no JSON form and are written as null.
//
//   JsonWriter w(2);                    // indent 2; 0: all on one line
//   w.begin_object();
//   w.key("name").value("k3");
//   w.key("rows").begin_array().value(1).value(2).end_array();
//   w.end_object();
//   std::string text = w.take();        // {"name": "k3", "rows": [1, 2]} (indented)
//
// Misuse (a value where a key is due, end_array() closing an object, take()
// with containers open) throws k3::Error(kInternal): it is a bug in the caller.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace k3 {

// Appends `s` as a JSON string, quotes included.
void append_json_string(std::string& out, std::string_view s);
// `s` as a JSON string, quotes included.
std::string json_string(std::string_view s);
// `v` as a JSON number: shortest round trip, or null when not finite.
std::string json_number(double v);
// `"key": value` after `indent` spaces: one member, its value already JSON,
// for a document another writer wrote to splice in (--stats-json's "draft").
std::string json_member_text(std::string_view key, std::string_view value, int indent);

class JsonWriter {
 public:
  // `indent` spaces per level, each member and element on its own line;
  // 0: one line, members separated by ", " and keys by ": ". Containers
  // marked inline() stay on one line inside an indented document.
  explicit JsonWriter(int indent = 0) : indent_(indent) {}
  // One line without a space after ',' or ':' ({"a":1,"b":[2,3]}): the
  // form of files whose bytes are fixed by their format (safetensors
  // headers) or kept small (one JSON line per generated id).
  static JsonWriter compact() {
    JsonWriter w;
    w.compact_ = true;
    return w;
  }

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  // The next container opened is written on one line (e.g. a small record
  // in an indented file).
  JsonWriter& inline_next();  // (named so: `inline` is a keyword)

  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  JsonWriter& value(int v) { return signed_value(v); }
  JsonWriter& value(long v) { return signed_value(v); }
  JsonWriter& value(long long v) { return signed_value(v); }
  JsonWriter& value(unsigned v) { return unsigned_value(v); }
  JsonWriter& value(unsigned long v) { return unsigned_value(v); }
  JsonWriter& value(unsigned long long v) { return unsigned_value(v); }
  JsonWriter& value(double v);
  JsonWriter& null();
  // An integer given as its decimal digits (an optional '-', then digits),
  // of any size (a parsed Python int); anything else is kInternal.
  JsonWriter& integer_text(std::string_view digits);
  // `v` with exactly `decimals` digits after the point (null when not finite).
  JsonWriter& fixed(double v, int decimals);

  // The document; every container must be closed (kInternal otherwise).
  std::string take();

 private:
  JsonWriter& signed_value(long long v);
  JsonWriter& unsigned_value(unsigned long long v);
  JsonWriter& raw(std::string_view text);  // a scalar's text where a value is due
  void before_value();
  struct Level;
  // The separator before the next member or element of `top`: a comma
  // after the first, then a space (one-line) or a new indented line.
  void next_member(Level& top);
  void open(char bracket, bool object);
  void close(char bracket, bool object);
  void newline(size_t depth);

  struct Level {
    bool object;
    bool one_line;
    size_t count = 0;
  };
  std::string out_;
  std::vector<Level> stack_;
  int indent_;
  bool key_pending_ = false;
  bool inline_next_ = false;
  bool done_ = false;
  bool compact_ = false;
};

}  // namespace k3
