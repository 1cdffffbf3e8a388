#include "common/json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "common/error.h"

namespace k3 {

namespace {

// Length of the well-formed UTF-8 sequence starting at p[0] (of n bytes
// left), or 0 when it is not one (Unicode's table of well-formed sequences:
// no overlong forms, no surrogates, nothing past U+10FFFF).
size_t utf8_sequence(const unsigned char* p, size_t n) {
  const unsigned char c = p[0];
  if (c < 0x80) return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c < 0xC2) return 0;  // a continuation byte, or an overlong 2-byte form
  if (c < 0xE0) {
    len = 2;
  } else if (c < 0xF0) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c < 0xF5) {
    len = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (n < len || p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < len; ++i)
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  return len;
}

void misuse(const char* what) { throw Error(ExitCode::kInternal, std::string("JsonWriter: ") + what); }

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = p[i];
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 15]);
        } else if (c < 0x80) {
          out.push_back(static_cast<char>(c));
        } else if (const size_t len = utf8_sequence(p + i, s.size() - i)) {
          out.append(s.data() + i, len);
          i += len;
          continue;
        } else {
          out += "\xEF\xBF\xBD";  // U+FFFD for each byte that is not well-formed UTF-8
        }
    }
    ++i;
  }
  out.push_back('"');
}

std::string json_string(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  // The shortest digits in %g's layout: an exponent as soon as the integer
  // part would need more digits than the value has, so no integer text past
  // 17 digits (which JSON readers take for a 64-bit integer) is written.
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general);
  return std::string(buf, r.ptr);
}

void JsonWriter::newline(size_t depth) {
  out_.push_back('\n');
  out_.append(depth * static_cast<size_t>(indent_), ' ');
}

void JsonWriter::before_value() {
  if (stack_.empty()) {
    if (done_) misuse("a second value after the document's one");
    return;
  }
  Level& top = stack_.back();
  if (top.object) {
    if (!key_pending_) misuse("a value in an object without its key");
    key_pending_ = false;
    return;
  }
  next_member(top);
}

void JsonWriter::next_member(Level& top) {
  if (top.count > 0) out_.push_back(',');
  if (top.one_line) {
    if (top.count > 0 && !compact_) out_.push_back(' ');
  } else {
    newline(stack_.size());
  }
  ++top.count;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  if (stack_.empty() || !stack_.back().object || key_pending_) misuse("a key outside an object or after a key");
  next_member(stack_.back());
  append_json_string(out_, k);
  out_ += compact_ ? ":" : ": ";
  key_pending_ = true;
  return *this;
}

void JsonWriter::open(char bracket, bool object) {
  before_value();
  out_.push_back(bracket);
  const bool one_line = indent_ == 0 || inline_next_ || (!stack_.empty() && stack_.back().one_line);
  stack_.push_back(Level{object, one_line});
  inline_next_ = false;
}

void JsonWriter::close(char bracket, bool object) {
  if (stack_.empty() || stack_.back().object != object || key_pending_)
    misuse(object ? "end_object() without its object or after a key" : "end_array() without its array");
  const Level top = stack_.back();
  stack_.pop_back();
  if (!top.one_line && top.count > 0) newline(stack_.size());
  out_.push_back(bracket);
  if (stack_.empty()) done_ = true;
}

JsonWriter& JsonWriter::begin_object() {
  open('{', true);
  return *this;
}
JsonWriter& JsonWriter::end_object() {
  close('}', true);
  return *this;
}
JsonWriter& JsonWriter::begin_array() {
  open('[', false);
  return *this;
}
JsonWriter& JsonWriter::end_array() {
  close(']', false);
  return *this;
}
JsonWriter& JsonWriter::inline_next() {
  inline_next_ = true;
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view text) {
  before_value();
  out_ += text;
  if (stack_.empty()) done_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
  append_json_string(out_, s);
  if (stack_.empty()) done_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(bool b) { return raw(b ? "true" : "false"); }
JsonWriter& JsonWriter::null() { return raw("null"); }
JsonWriter& JsonWriter::integer_text(std::string_view digits) {
  const std::string_view d = !digits.empty() && digits[0] == '-' ? digits.substr(1) : digits;
  if (d.empty() || d.find_first_not_of("0123456789") != std::string_view::npos)
    misuse(("integer_text() given \"" + std::string(digits.substr(0, 40)) + "\", not an integer").c_str());
  return raw(digits);
}
JsonWriter& JsonWriter::signed_value(long long v) { return raw(std::to_string(v)); }
JsonWriter& JsonWriter::unsigned_value(unsigned long long v) { return raw(std::to_string(v)); }
std::string json_member_text(std::string_view key, std::string_view value, int indent) {
  std::string out(static_cast<size_t>(indent < 0 ? 0 : indent), ' ');
  append_json_string(out, key);
  out += ": ";
  out += value;
  return out;
}

JsonWriter& JsonWriter::value(double v) { return raw(json_number(v)); }

JsonWriter& JsonWriter::fixed(double v, int decimals) {
  if (!std::isfinite(v)) return raw("null");
  char buf[400];  // enough for any finite double in %f with up to 17 decimals
  std::snprintf(buf, sizeof buf, "%.*f", decimals < 0 ? 0 : decimals > 17 ? 17 : decimals, v);
  return raw(buf);
}

std::string JsonWriter::take() {
  if (!stack_.empty() || !done_) misuse("take() before the document is complete");
  done_ = false;
  return std::move(out_);
}

}  // namespace k3
