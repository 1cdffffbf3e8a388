// The memory ladder as a small chart for the terminal: one row per preset,
// a bar for its forecast peak RSS (with a '|' where the memory budget ends,
// so the presets that fit are the bars left of it) and a bar for its
// seconds per token, each scaled to the largest value in its column.
// Where a person would rather look than read the arithmetic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace k3::doctor {

struct LadderRow {
  std::string name;
  uint64_t memory_bytes = 0;
  double seconds_per_token = 0;
};

// `budget_bytes` 0: no marker. `width`: characters of the longest bar.
std::vector<std::string> ladder_chart(const std::vector<LadderRow>& rows, uint64_t budget_bytes, int width = 30);

// Characters of a bar for `value` where `max` fills `width` (at least 1 for
// any value above 0).
int bar_length(double value, double max, int width);

}  // namespace k3::doctor
