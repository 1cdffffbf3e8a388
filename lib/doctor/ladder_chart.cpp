#include "doctor/ladder_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/byte_format.h"

namespace k3::doctor {

int bar_length(double value, double max, int width) {
  if (value <= 0 || max <= 0) return 0;
  return std::clamp(static_cast<int>(std::lround(value / max * width)), 1, width);
}

std::vector<std::string> ladder_chart(const std::vector<LadderRow>& rows, uint64_t budget_bytes, int width) {
  double max_mem = static_cast<double>(budget_bytes), max_spt = 0;
  for (const LadderRow& r : rows) {
    max_mem = std::max(max_mem, static_cast<double>(r.memory_bytes));
    max_spt = std::max(max_spt, r.seconds_per_token);
  }
  const int marker = budget_bytes ? bar_length(static_cast<double>(budget_bytes), max_mem, width) : -1;
  std::vector<std::string> out;
  out.push_back(std::string("  ") + "preset       memory (| = budget)" + std::string(width > 17 ? width - 17 : 0, ' ') +
                "          seconds per token");
  for (const LadderRow& r : rows) {
    std::string mem(width + 1, ' ');
    const int n = bar_length(static_cast<double>(r.memory_bytes), max_mem, width);
    for (int i = 0; i < n; ++i) mem[i] = '#';
    if (marker >= 0) mem[marker] = '|';
    char buf[256];
    std::snprintf(buf, sizeof buf, "  %-12s %s %9s  %s %.1f", r.name.c_str(), mem.c_str(),
                  format_bytes(r.memory_bytes).c_str(),
                  std::string(bar_length(r.seconds_per_token, max_spt, width), '=').c_str(), r.seconds_per_token);
    out.push_back(buf);
  }
  return out;
}

}  // namespace k3::doctor
