#include "cli/flag_suggestion.h"

#include <algorithm>
#include <numeric>

namespace k3::cli {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string closest_flag(const std::string& typed, const std::vector<std::string>& candidates) {
  const size_t limit = std::max<size_t>(2, typed.size() / 3);
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(typed, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  if (!best.empty()) return best;
  for (const std::string& c : candidates)
    if (c.size() >= 6 && c.size() > best.size() && typed.compare(0, c.size(), c) == 0) best = c;
  return best;
}

}  // namespace k3::cli
