#include "common/json_value.h"

#include <simdjson.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

#include "common/error.h"
#include "common/json_writer.h"

namespace k3 {

namespace {

using simdjson::ondemand::json_type;

struct ParseError {
  std::string message;
};

std::string_view trim_right(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A JSON number literal -> Python int (kept as its digits) or float.
JsonValue number_from_literal(std::string_view raw) {
  std::string_view s = trim_right(raw);
  size_t i = 0;
  bool negative = i < s.size() && s[i] == '-';
  if (negative) ++i;
  size_t int_start = i;
  while (i < s.size() && is_digit(s[i])) ++i;
  bool ok = i > int_start && !(s[int_start] == '0' && i - int_start > 1);
  bool is_float = false;
  if (ok && i < s.size() && s[i] == '.') {
    is_float = true;
    size_t f = ++i;
    while (i < s.size() && is_digit(s[i])) ++i;
    ok = i > f;
  }
  if (ok && i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    is_float = true;
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t e = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    ok = i > e;
  }
  if (!ok || i != s.size()) throw ParseError{"\"" + std::string(s.substr(0, 40)) + "\" is not a JSON number"};
  JsonValue v;
  if (!is_float) {
    v.kind = JsonValue::Kind::kInt;
    std::string_view digits = s.substr(int_start);
    v.text = (negative && digits != "0" ? "-" : "") + std::string(digits);  // Python: -0 is 0
    return v;
  }
  v.kind = JsonValue::Kind::kFloat;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v.number);
  if (ec == std::errc::result_out_of_range) {
    // Overflow becomes +-inf and underflow +-0.0, as Python's float() does.
    std::string copy(s);
    v.number = std::strtod(copy.c_str(), nullptr);
  } else if (ec != std::errc() || end != s.data() + s.size()) {
    throw ParseError{"\"" + std::string(s.substr(0, 40)) + "\" is not a JSON number"};
  }
  return v;
}

JsonValue string_value(std::string_view raw, std::string_view unescaped) {
  // Python's json.loads (strict) refuses raw control characters in strings.
  // (The raw token runs to the next token: whitespace after it is not the string's.)
  for (char c : trim_right(raw))
    if (static_cast<unsigned char>(c) < 0x20) throw ParseError{"a string holds an unescaped control character"};
  return JsonValue::string(std::string(unescaped));
}

template <typename V>
JsonValue build(V&& v, int depth);

template <typename V>
JsonValue build_object(V&& v, int depth) {
  JsonValue out = JsonValue::object();
  // Where each key sits, so a member is placed in constant time: scanning
  // every key on insert made an object of 150k keys take 20 s. A repeated
  // key keeps its first place and takes the last value, as set() does.
  std::unordered_map<std::string, size_t> where;
  for (auto field : v.get_object()) {
    std::string key(std::string_view(field.unescaped_key()));
    JsonValue value = build(field.value(), depth + 1);
    const auto [it, fresh] = where.try_emplace(key, out.keys.size());
    if (!fresh) {
      out.items[it->second] = std::move(value);
      continue;
    }
    out.keys.push_back(std::move(key));
    out.items.push_back(std::move(value));
  }
  return out;
}

template <typename V>
JsonValue build(V&& v, int depth) {
  if (depth > 512) throw ParseError{"nested deeper than 512 levels"};
  JsonValue out;
  switch (json_type(v.type())) {
    case json_type::object: return build_object(v, depth);
    case json_type::array:
      out.kind = JsonValue::Kind::kArray;
      for (auto element : v.get_array()) out.items.push_back(build(element.value(), depth + 1));
      return out;
    case json_type::number: return number_from_literal(std::string_view(v.raw_json_token()));
    case json_type::string: {
      std::string_view raw = v.raw_json_token();
      return string_value(raw, std::string_view(v.get_string()));
    }
    case json_type::boolean:
      out.kind = JsonValue::Kind::kBool;
      out.boolean = bool(v.get_bool());
      return out;
    case json_type::null:
      if (!bool(v.is_null())) throw ParseError{"invalid literal"};
      return out;
    default: throw ParseError{"unexpected token"};
  }
}

}  // namespace

const JsonValue* JsonValue::find(std::string_view key) const {
  if (kind != Kind::kObject) return nullptr;
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i] == key) return &items[i];
  return nullptr;
}

JsonValue::JsonValue(bool b) : kind(Kind::kBool), boolean(b) {}
JsonValue::JsonValue(int64_t v) : kind(Kind::kInt), text(std::to_string(v)) {}
JsonValue::JsonValue(uint64_t v) : kind(Kind::kInt), text(std::to_string(v)) {}
JsonValue::JsonValue(double v) {
  if (!std::isfinite(v)) return;  // null
  kind = Kind::kFloat;
  number = v;
}
JsonValue::JsonValue(std::string s) : kind(Kind::kString), text(std::move(s)) {}

JsonValue& JsonValue::set(std::string key, JsonValue value) {
  if (kind == Kind::kNull) kind = Kind::kObject;
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i] == key) {
      items[i] = std::move(value);
      return *this;
    }
  keys.push_back(std::move(key));
  items.push_back(std::move(value));
  return *this;
}

JsonValue& JsonValue::push(JsonValue value) {
  if (kind == Kind::kNull) kind = Kind::kArray;
  items.push_back(std::move(value));
  return *this;
}

void write_json_value(JsonWriter& w, const JsonValue& v, bool refuse_wide_integers) {
  switch (v.kind) {
    case JsonValue::Kind::kNull: w.null(); break;
    case JsonValue::Kind::kBool: w.value(v.boolean); break;
    case JsonValue::Kind::kInt:
      if (!refuse_wide_integers) {
        w.integer_text(v.text);
        break;
      }
      {
        long long n = 0;
        const char* end = v.text.data() + v.text.size();
        const auto [ptr, ec] = std::from_chars(v.text.data(), end, n);
        if (ec != std::errc() || ptr != end)
          throw Error(ExitCode::kInternal, "write_json: integer " + v.text + " is not 64-bit");
        w.value(n);
      }
      break;
    case JsonValue::Kind::kFloat: w.value(v.number); break;
    case JsonValue::Kind::kString: w.value(v.text); break;
    case JsonValue::Kind::kArray:
      w.begin_array();
      for (const JsonValue& item : v.items) write_json_value(w, item, refuse_wide_integers);
      w.end_array();
      break;
    case JsonValue::Kind::kObject:
      w.begin_object();
      for (size_t i = 0; i < v.keys.size(); ++i) {
        w.key(v.keys[i]);
        write_json_value(w, v.items[i], refuse_wide_integers);
      }
      w.end_object();
      break;
  }
}

std::string JsonValue::dump(int indent) const {
  JsonWriter w(indent);
  write_json_value(w, *this, false);
  std::string out = w.take();
  out.push_back('\n');
  return out;
}

const char* json_kind_name(JsonValue::Kind kind) {
  switch (kind) {
    case JsonValue::Kind::kNull: return "null";
    case JsonValue::Kind::kBool: return "a boolean";
    case JsonValue::Kind::kInt: return "an integer";
    case JsonValue::Kind::kFloat: return "a number";
    case JsonValue::Kind::kString: return "a string";
    case JsonValue::Kind::kArray: return "an array";
    case JsonValue::Kind::kObject: return "an object";
  }
  return "?";
}

bool parse_json(std::string_view text, JsonValue& out, std::string& error) {
  try {
    simdjson::ondemand::parser parser;
    simdjson::padded_string padded(text);
    simdjson::ondemand::document doc = parser.iterate(padded);
    const json_type root = doc.type();
    if (root == json_type::object || root == json_type::array) {
      out = build(doc.get_value(), 0);
      // Nothing may follow the value (the location is out of bounds at the end).
      const char* rest = nullptr;
      if (doc.current_location().get(rest) != simdjson::OUT_OF_BOUNDS) throw ParseError{"text follows the JSON value"};
      return true;
    }
    // A scalar document: its token, then only whitespace.
    std::string_view raw = doc.raw_json_token();
    switch (root) {
      case json_type::number: out = number_from_literal(raw); break;
      case json_type::string: out = string_value(raw, std::string_view(doc.get_string())); break;
      case json_type::boolean:
        out = JsonValue();
        out.kind = JsonValue::Kind::kBool;
        out.boolean = bool(doc.get_bool());
        break;
      case json_type::null:
        if (!bool(doc.is_null())) throw ParseError{"invalid literal"};
        out = JsonValue();
        break;
      default: throw ParseError{"unexpected token"};
    }
    const size_t end = static_cast<size_t>(raw.data() - padded.data()) + raw.size();
    for (size_t i = end; i < text.size(); ++i)
      if (text[i] != ' ' && text[i] != '\n' && text[i] != '\r' && text[i] != '\t')
        throw ParseError{"text follows the JSON value"};
    return true;
  } catch (const simdjson::simdjson_error& e) {
    error = e.what();
  } catch (const ParseError& e) {
    error = e.message;
  }
  return false;
}

}  // namespace k3
