#include "doctor/json_value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "common/json_writer.h"

namespace k3::doctor {

JsonValue::JsonValue(bool b) : kind_(Kind::kBool), bool_(b) {}
JsonValue::JsonValue(int v) : JsonValue(static_cast<int64_t>(v)) {}
JsonValue::JsonValue(int64_t v) : kind_(Kind::kNumber), scalar_(std::to_string(v)) {}
JsonValue::JsonValue(uint64_t v) : kind_(Kind::kNumber), scalar_(std::to_string(v)) {}
JsonValue::JsonValue(double v) {
  if (!std::isfinite(v)) return;  // null
  kind_ = Kind::kNumber;
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  scalar_.assign(buf, ec == std::errc() ? p : buf);
  if (scalar_.empty()) scalar_ = "0";
}
JsonValue::JsonValue(const char* s) : kind_(Kind::kString), scalar_(s ? s : "") {}
JsonValue::JsonValue(std::string s) : kind_(Kind::kString), scalar_(std::move(s)) {}

JsonValue JsonValue::object() {
  JsonValue v;
  v.kind_ = Kind::kObject;
  return v;
}

JsonValue JsonValue::array() {
  JsonValue v;
  v.kind_ = Kind::kArray;
  return v;
}

JsonValue& JsonValue::set(const std::string& key, JsonValue v) {
  kind_ = Kind::kObject;
  for (auto& [k, old] : members_)
    if (k == key) {
      old = std::move(v);
      return *this;
    }
  members_.emplace_back(key, std::move(v));
  return *this;
}

JsonValue& JsonValue::push(JsonValue v) {
  kind_ = Kind::kArray;
  items_.push_back(std::move(v));
  return *this;
}

std::string JsonValue::dump(int indent) const {
  std::string out;
  dump_to(&out, indent, 0);
  out.push_back('\n');
  return out;
}

void JsonValue::dump_to(std::string* out, int indent, int depth) const {
  auto newline = [&](int d) {
    if (indent <= 0) return;
    out->push_back('\n');
    out->append(static_cast<size_t>(indent * d), ' ');
  };
  switch (kind_) {
    case Kind::kNull: *out += "null"; break;
    case Kind::kBool: *out += bool_ ? "true" : "false"; break;
    case Kind::kNumber: *out += scalar_; break;
    case Kind::kString: append_json_string(*out, scalar_); break;
    case Kind::kArray:
      if (items_.empty()) {
        *out += "[]";
        break;
      }
      out->push_back('[');
      for (size_t i = 0; i < items_.size(); ++i) {
        if (i) out->push_back(',');
        newline(depth + 1);
        items_[i].dump_to(out, indent, depth + 1);
      }
      newline(depth);
      out->push_back(']');
      break;
    case Kind::kObject:
      if (members_.empty()) {
        *out += "{}";
        break;
      }
      out->push_back('{');
      for (size_t i = 0; i < members_.size(); ++i) {
        if (i) out->push_back(',');
        newline(depth + 1);
        append_json_string(*out, members_[i].first);
        *out += indent > 0 ? ": " : ":";
        members_[i].second.dump_to(out, indent, depth + 1);
      }
      newline(depth);
      out->push_back('}');
      break;
  }
}

}  // namespace k3::doctor
