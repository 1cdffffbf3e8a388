// One definition per sampling setting: its valid range and its name, which
// is the name the HTTP API gives it (k3-serve's "top_k") and the key a
// command line spells as its flag (cli/flag_spellings.cpp: k3-forward
// --top-k). The sampler's checks (validate_sampling_params,
// validate_penalty_params), the tools' flags and the server's fields all
// check a value here, so a value one accepts the others accept too, and a
// refusal names the setting as the caller wrote it.
#pragma once

#include <string>

namespace k3 {

enum class SamplingSetting {
  kTemperature,
  kTopK,
  kTopP,
  kMinP,
  kRepetitionPenalty,
  kFrequencyPenalty,
  kPresencePenalty,
  kRepeatLastN,
};

// How the caller names settings: as the front end spells them
// (common/setting_spelling.h; the tools' flags, "--top-k") or by API field
// ("top_k").
enum class SettingNames { kFlag, kApiField };

struct SettingRule {
  const char* field;  // "top_k" (llama.cpp's name where OpenAI has none: repetition_penalty, repeat_last_n)
  double lo, hi;      // the valid range; an open end excludes its bound
  bool lo_open, hi_open;
  bool integer;
  const char* rule;  // the range in words: "must be >= 0 (0 means off)"
};

const SettingRule& setting_rule(SamplingSetting setting);
bool setting_accepts(SamplingSetting setting, double value);
// The setting's name as `names` says.
std::string setting_name(SamplingSetting setting, SettingNames names);
// Throws k3::Error(kUsage) "<name> must be ..., got <value>" unless the value is in range.
void check_setting(SamplingSetting setting, double value, SettingNames names);

struct SamplingParams;
struct PenaltyParams;
// Every setting of `params` checked, a refusal naming it as `names` says.
// validate_sampling_params and validate_penalty_params (sampler.h,
// penalties.h) are these naming flags.
void check_sampling_params(const SamplingParams& params, SettingNames names);
void check_penalty_params(const PenaltyParams& params, SettingNames names);

}  // namespace k3
