#include "common/rate_format.h"

#include <cmath>
#include <cstdio>

namespace k3 {

std::string three_digits(double v) {
  if (!std::isfinite(v) || v <= 0) return "0";
  // Decimals so that three digits are significant: 13.7 (1), 0.125 (3), 0.00123 (5); none from 100 up.
  const int magnitude = static_cast<int>(std::floor(std::log10(v)));
  int decimals = 2 - magnitude;
  if (decimals < 0) decimals = 0;
  if (decimals > 9) decimals = 9;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string seconds_per_token(double seconds, int64_t tokens) {
  if (tokens <= 0) return "- s/token";
  return three_digits(seconds / static_cast<double>(tokens)) + " s/token";
}

std::string tokens_per_second(double seconds, int64_t tokens) {
  if (!(seconds > 0)) return "- tokens/s";
  return three_digits(static_cast<double>(tokens) / seconds) + " tokens/s";
}

}  // namespace k3
