#include "platform/meminfo.h"

#include <charconv>
#include <sstream>

namespace k3 {

namespace {
// "MemTotal:       24683620 kB" -> bytes.
std::optional<uint64_t> parse_kb_value(const std::string& rest) {
  size_t i = rest.find_first_not_of(" \t");
  if (i == std::string::npos) return std::nullopt;
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(rest.data() + i, rest.data() + rest.size(), v);
  if (ec != std::errc()) return std::nullopt;
  std::string unit(p, rest.data() + rest.size());
  size_t u = unit.find_first_not_of(" \t");
  unit = u == std::string::npos ? "" : unit.substr(u);
  while (!unit.empty() && (unit.back() == ' ' || unit.back() == '\r')) unit.pop_back();
  if (unit == "kB") return v * 1024;
  if (unit.empty()) return v;
  return std::nullopt;
}
}  // namespace

MemInfo parse_meminfo(const std::string& text) {
  MemInfo m;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    std::optional<uint64_t>* dst = nullptr;
    if (key == "MemTotal") dst = &m.total;
    else if (key == "MemAvailable") dst = &m.available;
    else if (key == "MemFree") dst = &m.free;
    else if (key == "SwapTotal") dst = &m.swap_total;
    else if (key == "SwapFree") dst = &m.swap_free;
    if (dst) *dst = parse_kb_value(line.substr(colon + 1));
  }
  return m;
}

}  // namespace k3
