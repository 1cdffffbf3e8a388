#include "sampling/sampling_settings.h"

#include <cmath>
#include <cstdint>

#include "common/setting_spelling.h"
#include "sampling/flag_refusal.h"

namespace k3 {

namespace {

constexpr double kInf = HUGE_VAL;
constexpr double kInt32Max = 2147483647.0;

// Indexed by SamplingSetting.
constexpr SettingRule kRules[] = {
    {"temperature", 0, kInf, false, true, false, "must be a finite number >= 0 (0 means greedy)"},
    {"top_k", 0, kInt32Max, false, false, true, "must be >= 0 (0 means off)"},
    {"top_p", 0, 1, true, false, false, "must be in (0, 1] (1 means off)"},
    {"min_p", 0, 1, false, false, false, "must be in [0, 1] (0 means off)"},
    {"repetition_penalty", 0, kInf, true, true, false, "must be a finite number > 0 (1 means off)"},
    {"frequency_penalty", -2, 2, false, false, false, "must be in [-2, 2] (0 means off)"},
    {"presence_penalty", -2, 2, false, false, false, "must be in [-2, 2] (0 means off)"},
    {"repeat_last_n", -1, kInt32Max, false, false, true, "must be >= -1 (-1: the whole sequence; 0: off)"},
};

}  // namespace

const SettingRule& setting_rule(SamplingSetting setting) { return kRules[static_cast<int>(setting)]; }

bool setting_accepts(SamplingSetting setting, double v) {
  const SettingRule& r = setting_rule(setting);
  if (!std::isfinite(v)) return false;  // NaN and infinities are in no range
  if (r.integer && v != std::floor(v)) return false;
  if (r.lo_open ? !(v > r.lo) : !(v >= r.lo)) return false;
  if (r.hi_open ? !(v < r.hi) : !(v <= r.hi)) return false;
  return true;
}

std::string setting_name(SamplingSetting setting, SettingNames names) {
  const SettingRule& r = setting_rule(setting);
  return names == SettingNames::kFlag ? spelled(r.field) : std::string(r.field);
}

void check_setting(SamplingSetting setting, double value, SettingNames names) {
  if (setting_accepts(setting, value)) return;
  const std::string rule = setting_name(setting, names) + " " + setting_rule(setting).rule;
  if (setting_rule(setting).integer && std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 9e18)
    refuse_flag_value(rule, static_cast<int64_t>(value));
  refuse_flag_value(rule, value);
}

}  // namespace k3
