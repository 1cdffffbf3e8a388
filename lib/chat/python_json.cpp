#include "chat/python_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "common/json_writer.h"

namespace k3 {

namespace {

struct Style {
  const char* item_sep;
  const char* key_sep;
  bool sort_keys;
};

void append_value(std::string& out, const JsonValue& v, const Style& style) {
  switch (v.kind) {
    case JsonValue::Kind::kNull: out += "null"; return;
    case JsonValue::Kind::kBool: out += v.boolean ? "true" : "false"; return;
    case JsonValue::Kind::kInt: out += v.text; return;
    case JsonValue::Kind::kFloat: out += python_float_repr(v.number); return;
    case JsonValue::Kind::kString: append_json_string(out, v.text); return;  // as json.dumps(ensure_ascii=False)
    case JsonValue::Kind::kArray:
      out.push_back('[');
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i) out += style.item_sep;
        append_value(out, v.items[i], style);
      }
      out.push_back(']');
      return;
    case JsonValue::Kind::kObject: {
      std::vector<size_t> order(v.keys.size());
      std::iota(order.begin(), order.end(), size_t{0});
      // Python sorts str keys by code point; UTF-8 byte order is the same.
      if (style.sort_keys)
        std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v.keys[a] < v.keys[b]; });
      out.push_back('{');
      for (size_t i = 0; i < order.size(); ++i) {
        if (i) out += style.item_sep;
        append_json_string(out, v.keys[order[i]]);
        out += style.key_sep;
        append_value(out, v.items[order[i]], style);
      }
      out.push_back('}');
      return;
    }
  }
}

}  // namespace

std::string python_float_repr(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
  // Shortest round-trip digits in scientific form, e.g. "1.25e-07".
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));
  bool negative = sci[0] == '-';
  if (negative) sci.remove_prefix(1);
  size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e))
    if (c != '.') digits.push_back(c);
  int exp10 = 0;
  std::from_chars(sci.data() + e + 1 + (sci[e + 1] == '+'), sci.data() + sci.size(), exp10);
  // Python (float_repr_style 'short'): with the value 0.DIGITS x 10^decpt,
  // fixed notation when -4 < decpt <= 16, else exponent notation.
  const int decpt = exp10 + 1;
  std::string out = negative ? "-" : "";
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0.";
      out.append(static_cast<size_t>(-decpt), '0');
      out += digits;
    } else if (static_cast<size_t>(decpt) >= digits.size()) {
      out += digits;
      out.append(static_cast<size_t>(decpt) - digits.size(), '0');
      out += ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt));
      out += '.';
      out += digits.substr(static_cast<size_t>(decpt));
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) {
    out += '.';
    out += digits.substr(1);
  }
  char ebuf[16];
  std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
  out += ebuf;
  return out;
}

std::string python_json_dumps(const JsonValue& v) {
  std::string out;
  append_value(out, v, Style{", ", ": ", false});
  return out;
}

std::string sorted_compact_json(const JsonValue& v) {
  std::string out;
  append_value(out, v, Style{",", ":", true});
  return out;
}

}  // namespace k3
