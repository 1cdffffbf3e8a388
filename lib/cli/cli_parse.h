// Command-line parsing with the conventions every k3 tool documents:
// --help prints the help and exits 0; --version prints the version and the
// kernel target and exits 0 before anything else is checked; a bad flag or argument prints one line
// naming it and exits 2 (kUsage), never CLI11's own exit codes.
//
// Header-only so that only the tools, not the library, depend on CLI11.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdio>
#include <optional>

#include "cli/tool_version.h"
#include "common/error.h"

namespace k3 {

// Parses argv into `app`. Returns the exit status when the tool should stop
// now (help shown, or a usage error), nothing when it should go on.
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, const char* tool) {
  app.add_flag_callback("--version", [] {}, "print the version and the kernel target, then exit");
  if (auto status = answer_version_flag(argc, argv, tool)) return status;
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
