// Command-line parsing with the conventions every k3 tool documents:
// --help prints the help and exits 0; a bad flag or argument prints one line
// naming it and exits 2 (kUsage), never CLI11's own exit codes.
//
// Header-only; the cli layer (lib/cli) builds the tools' shared options on it.
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "common/error.h"

namespace k3 {

// Bounds for counts and sizes given on the command line: beyond them a flag
// is a usage error naming the valid range, never an abort or a crawl.
inline constexpr int kMaxComputeThreads = 1024;  // --threads
inline constexpr int kMaxIoThreads = 256;        // --io-threads, parallel reads in flight
inline constexpr int kMaxTransferJobs = 64;      // --jobs, parallel downloads
inline constexpr double kMaxGigabytes = 1e6;     // --trunk-gb, --cache-gb
inline constexpr uint64_t kMaxContext = uint64_t{1} << 40;  // --ctx positions

// A finite number from 0 to `max` (NaN, infinities, negatives refused).
inline CLI::Validator finite_range(double max) {
  return CLI::Validator(
      [max](std::string& in) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(in.c_str(), &end);
        if (end == in.c_str() || *end != '\0' || !std::isfinite(v) || v < 0 || v > max)
          return "value " + in + " is not a number from 0 to " + std::to_string(static_cast<long long>(max));
        return "";
      },
      "NUMBER in 0.." + std::to_string(static_cast<long long>(max)));
}

// Parses argv into `app`. Returns the exit status when the tool should stop
// now (help shown, or a usage error), nothing when it should go on.
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, const char* tool) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s (see %s --help)\n", tool, e.what(), tool);
    return static_cast<int>(ExitCode::kUsage);
  }
  return std::nullopt;
}

}  // namespace k3
