#include "model/finite_check.h"

#include <cmath>
#include <cstdint>

#include "common/command_keys.h"
#include "common/error.h"
#include "common/setting_spelling.h"

namespace k3 {

size_t first_non_finite(const float* x, size_t n) {
  // x - x is 0 for finite x and NaN otherwise; OR-ing the comparisons over a
  // block keeps the loop branch-free so it vectorises.
  constexpr size_t kBlock = 256;
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t e = b + kBlock < n ? b + kBlock : n;
    bool bad = false;
    for (size_t i = b; i < e; ++i) bad |= !(x[i] - x[i] == 0.0f);
    if (!bad) continue;
    for (size_t i = b; i < e; ++i)
      if (!std::isfinite(x[i])) return i;
  }
  return n;
}

void require_finite(const float* x, size_t n, size_t row_len, int64_t first_pos, const std::string& where) {
  const size_t i = first_non_finite(x, n);
  if (i == n) return;
  const float v = x[i];
  const char* what = std::isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf";
  throw Error(ExitCode::kBadModel, std::string("the model produced ") + what + " in " + where + " (token position " +
                                       std::to_string(first_pos + static_cast<int64_t>(i / row_len)) + ", element " +
                                       std::to_string(i % row_len) + "): its weights hold NaN or infinite values (" +
                                       spelled(kVerifyCheckpointFull) + " and " + spelled(kCheckTrunk) +
                                       " name the tensor; re-download the damaged shard)");
}

}  // namespace k3
