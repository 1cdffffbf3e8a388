// The one refusal of a sampling flag's value (--temp, --top-k, --top-p,
// --min-p and the penalties), for the checks of sampler.h and penalties.h
// (flags, and the settings a state file holds): one rule, the same words.
#pragma once

#include <cstdint>
#include <string>

namespace k3 {

// Throws kUsage "<rule>, got <value>": `rule` names the flag and its valid
// range ("--top-p must be in (0, 1] (1 means off)"); a double is written as
// %g writes it, an integer in full.
[[noreturn]] void refuse_flag_value(const std::string& rule, double value);
[[noreturn]] void refuse_flag_value(const std::string& rule, int64_t value);

}  // namespace k3
