#include "sampling/penalties.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "sampling/flag_refusal.h"

namespace k3 {

void validate_penalty_params(const PenaltyParams& p) {
  if (!(p.repetition > 0.0) || std::isinf(p.repetition))
    refuse_flag_value("--repeat-penalty must be a finite number > 0 (1 means off)", p.repetition);
  if (!(p.frequency >= -2.0 && p.frequency <= 2.0))
    refuse_flag_value("--frequency-penalty must be in [-2, 2] (0 means off)", p.frequency);
  if (!(p.presence >= -2.0 && p.presence <= 2.0))
    refuse_flag_value("--presence-penalty must be in [-2, 2] (0 means off)", p.presence);
  if (p.last_n < -1)
    refuse_flag_value("--repeat-last-n must be >= -1 (-1: the whole sequence; 0: off)", int64_t{p.last_n});
}

void apply_penalties(float* logits, int64_t vocab, std::span<const int32_t> sequence, const PenaltyParams& p) {
  if (!p.active()) return;
  const size_t n = p.last_n < 0 ? sequence.size() : std::min(sequence.size(), static_cast<size_t>(p.last_n));
  std::vector<int32_t> window(sequence.end() - static_cast<ptrdiff_t>(n), sequence.end());
  std::sort(window.begin(), window.end());
  for (size_t i = 0; i < window.size();) {
    size_t j = i;
    while (j < window.size() && window[j] == window[i]) ++j;
    const int32_t id = window[i];
    const double count = static_cast<double>(j - i);
    i = j;
    if (id < 0 || id >= vocab) continue;
    double l = logits[id];
    l = l > 0 ? l / p.repetition : l * p.repetition;
    l -= count * p.frequency + p.presence;
    logits[id] = static_cast<float>(l);
  }
}

}  // namespace k3
