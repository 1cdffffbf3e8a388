#include "serve/response_extras.h"

namespace k3::serve {

namespace {

// A version tag, so a later encoding can be told from this one.
constexpr std::string_view kTag = "k3r1:";
constexpr char kHex[] = "0123456789abcdef";

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string encrypted_reasoning(const std::string& reasoning) {
  std::string out(kTag);
  out.reserve(kTag.size() + 2 * reasoning.size());
  for (unsigned char c : reasoning) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

std::optional<std::string> reasoning_of(const std::string& encrypted_content) {
  if (encrypted_content.rfind(kTag, 0) != 0 || (encrypted_content.size() - kTag.size()) % 2) return std::nullopt;
  std::string out;
  out.reserve((encrypted_content.size() - kTag.size()) / 2);
  for (size_t i = kTag.size(); i < encrypted_content.size(); i += 2) {
    const int hi = hex_value(encrypted_content[i]), lo = hex_value(encrypted_content[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi << 4 | lo);
  }
  return out;
}

JsonValue reasoning_item(const std::string& id, const std::string& reasoning, const ResponseExtras& extras) {
  JsonValue item =
      JsonValue::object()
          .set("type", "reasoning")
          .set("id", JsonValue::string(id))
          .set("summary",
               JsonValue::array().push(
                   JsonValue::object().set("type", "summary_text").set("text", JsonValue::string(reasoning))));
  if (extras.encrypted_reasoning) item.set("encrypted_content", JsonValue::string(encrypted_reasoning(reasoning)));
  return item;
}

}  // namespace k3::serve
