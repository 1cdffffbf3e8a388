#include "platform/meminfo.h"

#include <sstream>
#include <string_view>

#include "platform/kernel_limits.h"

namespace k3 {

namespace {
// "MemTotal:       24683620 kB" -> bytes.
std::optional<uint64_t> parse_kb_value(const std::string& rest) {
  std::string_view after;
  const std::optional<uint64_t> v = parse_leading_uint(rest, &after);
  if (!v) return std::nullopt;
  std::string unit(after);
  size_t u = unit.find_first_not_of(" \t");
  unit = u == std::string::npos ? "" : unit.substr(u);
  while (!unit.empty() && (unit.back() == ' ' || unit.back() == '\r')) unit.pop_back();
  if (unit == "kB") return *v * 1024;
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
