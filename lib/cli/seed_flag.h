// --seed's check, shared by every tool that takes one (k3-forward, k3-chat,
// k3-synth): a decimal integer from 0 to kMaxSeed, the range k3-serve's
// "seed" takes too. CLI11 alone would wrap -1 and saturate 2^64 and longer
// numbers to 2^64-1, so different seeds would give the same ids.
//
// Header-only: CLI11 stays a dependency of the tools alone.
#pragma once

#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdint>
#include <string>

#include "common/cli_limits.h"

namespace k3::cli {

inline CLI::Validator seed_range() {
  const std::string valid = "valid: an integer from 0 to " + std::to_string(kMaxSeed);
  return CLI::Validator(
      [valid](std::string& input) -> std::string {
        uint64_t v = 0;
        const char* end = input.data() + input.size();
        const auto [stop, ec] = std::from_chars(input.data(), end, v);
        const bool digits = !input.empty() && input.find_first_not_of("0123456789") == std::string::npos;
        if (!digits) return "'" + input + "' is not a seed (" + valid + ")";
        if (ec != std::errc() || stop != end || v > kMaxSeed) return input + " is out of range (" + valid + ")";
        return std::string();
      },
      "0.." + std::to_string(kMaxSeed));
}

}  // namespace k3::cli
