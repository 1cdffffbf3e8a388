// "1 sequence", "2 sequences": a count with its noun in the right number, for
// the figures the tools print.
#pragma once

#include <cstdint>
#include <string>

namespace k3 {

// `count` then `singular`, or `plural_form` (default: singular + "s") unless count is 1.
inline std::string plural(uint64_t count, const std::string& singular, const std::string& plural_form = "") {
  return std::to_string(count) + " " + (count == 1 ? singular : plural_form.empty() ? singular + "s" : plural_form);
}

}  // namespace k3
