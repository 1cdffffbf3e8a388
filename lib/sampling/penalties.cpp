#include "sampling/penalties.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "sampling/sampling_settings.h"

namespace k3 {

void check_penalty_params(const PenaltyParams& p, SettingNames names) {
  check_setting(SamplingSetting::kRepetitionPenalty, p.repetition, names);
  check_setting(SamplingSetting::kFrequencyPenalty, p.frequency, names);
  check_setting(SamplingSetting::kPresencePenalty, p.presence, names);
  check_setting(SamplingSetting::kRepeatLastN, p.last_n, names);
}

void validate_penalty_params(const PenaltyParams& p) { check_penalty_params(p, SettingNames::kFlag); }

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
