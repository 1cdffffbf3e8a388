#include "platform/kernel_limits.h"

#include <charconv>
#include <sstream>

namespace k3 {

namespace {
// "unlimited" -> nullopt (unlimited); a number -> that number; else sets *ok=false.
std::optional<uint64_t> limit_value(const std::string& word, bool* ok) {
  if (word == "unlimited") return std::nullopt;
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
  if (ec != std::errc() || p != word.data() + word.size()) *ok = false;
  return v;
}
}  // namespace

ResourceLimit parse_proc_limit(const std::string& limits_text, const std::string& name) {
  ResourceLimit r;
  std::istringstream in(limits_text);
  std::string line;
  while (std::getline(in, line)) {
    // Columns are separated by runs of spaces and the names contain single
    // spaces, so match the name as a prefix followed by a space.
    if (line.compare(0, name.size(), name) != 0) continue;
    if (line.size() <= name.size() || line[name.size()] != ' ') continue;
    std::istringstream rest(line.substr(name.size()));
    std::string soft, hard;
    if (!(rest >> soft >> hard)) continue;
    bool ok = true;
    auto s = limit_value(soft, &ok);
    auto h = limit_value(hard, &ok);
    if (!ok) continue;
    r.found = true;
    r.soft = s;
    r.hard = h;
    return r;
  }
  return r;
}

std::string parse_thp_mode(const std::string& text) {
  size_t a = text.find('[');
  size_t b = text.find(']', a == std::string::npos ? 0 : a);
  if (a == std::string::npos || b == std::string::npos) return "";
  return text.substr(a + 1, b - a - 1);
}

std::optional<uint64_t> parse_leading_uint(std::string_view text, std::string_view* rest) {
  const size_t i = text.find_first_not_of(" \t\n");
  if (i == std::string_view::npos) return std::nullopt;
  uint64_t v = 0;
  const auto [p, ec] = std::from_chars(text.data() + i, text.data() + text.size(), v);
  if (ec != std::errc()) return std::nullopt;
  if (rest) *rest = text.substr(static_cast<size_t>(p - text.data()));
  return v;
}

std::optional<uint64_t> parse_uint_file(const std::string& text) { return parse_leading_uint(text); }

}  // namespace k3
