// Range checks for numeric flags whose errors name the flag and the valid
// range in plain numbers ("--gen: -3 is out of range: valid is 0 or more"),
// where CLI11's own print the limits of a double to 300 digits.
//
// Header-only: CLI11 stays a dependency of the tools alone.
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

namespace k3::cli {

// 0, 1, 0.05, 10000000: integers without a fraction, others in %g.
inline std::string plain_number(double v) {
  char buf[64];
  if (std::fabs(v) < 1e15 && v == std::floor(v)) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The value lies in [lo, hi] (hi infinite: no upper limit).
inline CLI::Validator in_range(double lo, double hi = std::numeric_limits<double>::infinity()) {
  const std::string valid =
      std::isinf(hi) ? plain_number(lo) + " or more" : "from " + plain_number(lo) + " to " + plain_number(hi);
  return CLI::Validator(
      [lo, hi, valid](std::string& input) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(input.c_str(), &end);
        if (input.empty() || end != input.c_str() + input.size() || std::isnan(v))
          return "'" + input + "' is not a number (valid: " + valid + ")";
        if (v < lo || v > hi) return input + " is out of range (valid: " + valid + ")";
        return std::string();
      },
      std::isinf(hi) ? ">= " + plain_number(lo) : plain_number(lo) + ".." + plain_number(hi));
}

inline CLI::Validator non_negative() { return in_range(0); }

// A finite number from 0 to `max`: NaN, infinities and negatives refused.
inline CLI::Validator finite_range(double max) { return in_range(0, max); }
inline CLI::Validator positive_integer() { return in_range(1); }

}  // namespace k3::cli
